<?php

namespace App\Jobs;

use App\Models\Student;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class SendReminder implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public function __construct(public int $studentId)
    {
    }

    public function handle(): void
    {
        Student::find($this->studentId)?->mailTermReport();
    }
}
