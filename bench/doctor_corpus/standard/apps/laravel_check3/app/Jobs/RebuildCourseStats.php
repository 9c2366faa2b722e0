<?php

namespace App\Jobs;

use App\Models\Enrollment;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class RebuildCourseStats implements ShouldQueue
{
    use Dispatchable, Queueable;

    public function __construct(public int $courseId)
    {
    }

    public function handle(): void
    {
        foreach (Enrollment::where('course_id', $this->courseId)->lazy() as $enrollment) {
            $enrollment->recalculateAverage();
        }
    }
}
