<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;
use Illuminate\Notifications\Notifiable;

class Subscriber extends Model
{
    use Notifiable;

    protected $guarded = [];

    public function deliveries()
    {
        return $this->hasMany(NewsletterDelivery::class);
    }
}
