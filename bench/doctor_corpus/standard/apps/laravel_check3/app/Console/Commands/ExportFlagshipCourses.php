<?php

namespace App\Console\Commands;

use App\Models\Course;
use Illuminate\Console\Command;

class ExportFlagshipCourses extends Command
{
    protected $signature = 'school:export-flagships';

    public function handle(): void
    {
        foreach ([12, 14, 19] as $courseId) {
            Course::findOrFail($courseId)->startGradeExport();
        }
    }
}
