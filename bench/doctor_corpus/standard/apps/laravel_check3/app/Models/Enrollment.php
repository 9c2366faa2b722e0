<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;
use Illuminate\Database\Eloquent\Relations\BelongsTo;

class Enrollment extends Model
{
    protected $guarded = [];

    public function student(): BelongsTo
    {
        return $this->belongsTo(Student::class);
    }

    public function course(): BelongsTo
    {
        return $this->belongsTo(Course::class);
    }

    public function recalculateAverage(): void
    {
        $average = $this->grades()->avg('score');
        $this->update(['average' => $average]);
    }

    public function grades()
    {
        return $this->hasMany(Grade::class);
    }
}
