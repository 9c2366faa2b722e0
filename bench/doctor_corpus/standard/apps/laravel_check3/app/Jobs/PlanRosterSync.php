<?php

namespace App\Jobs;

use App\Models\Student;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class PlanRosterSync implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public function handle(): void
    {
        $low = Student::min('id');
        $high = Student::max('id');
        if ($low === null) {
            return;
        }

        $jobs = [];
        foreach (range($low, $high) as $studentId) {
            $jobs[] = new SyncStudent($studentId);
        }
        $this->batch()->add($jobs);
    }
}
