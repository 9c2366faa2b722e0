<?php

namespace App\Jobs;

use App\Models\Student;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class PlanReminderRun implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public function handle(): void
    {
        $jobs = Student::where('active', true)
            ->get()
            ->map(fn (Student $student) => new SendReminder($student->id));

        $this->batch()->add($jobs->all());
    }
}
