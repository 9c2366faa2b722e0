<?php

namespace App\Models;

use App\Mail\TermReport;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Notifications\Notifiable;
use Illuminate\Support\Facades\Mail;

class Student extends Model
{
    use Notifiable;

    protected $guarded = [];

    public function enrollments()
    {
        return $this->hasMany(Enrollment::class);
    }

    public function mailTermReport(): void
    {
        Mail::to($this->guardian_email)->send(new TermReport($this));
    }
}
