<?php

namespace App\Jobs;

use App\Models\Course;
use App\Models\Enrollment;
use App\Models\GradeExport;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

class ExportGrades implements ShouldQueue
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable;

    public int $timeout = 20;

    public function __construct(
        public int $courseId,
        public int $exportId,
        public int $fromId,
        public int $toId,
    ) {
    }

    public function handle(): void
    {
        $course = Course::findOrFail($this->courseId);
        $enrollments = Enrollment::where('course_id', $this->courseId)
            ->whereBetween('id', [$this->fromId, $this->toId])
            ->get();
        foreach ($enrollments as $enrollment) {
            $course->exportGrade($enrollment);
        }
        GradeExport::whereKey($this->exportId)->increment('exported_enrollments', $this->toId - $this->fromId + 1);
    }
}
