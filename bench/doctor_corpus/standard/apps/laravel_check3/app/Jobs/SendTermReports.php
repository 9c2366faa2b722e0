<?php

namespace App\Jobs;

use App\Models\Student;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class SendTermReports implements ShouldQueue
{
    use Dispatchable, Queueable;

    public $timeout = 600;

    public function handle(): void
    {
        $students = Student::where('active', true)->cursor();
        foreach ($students as $student) {
            $student->mailTermReport();
        }
    }
}
