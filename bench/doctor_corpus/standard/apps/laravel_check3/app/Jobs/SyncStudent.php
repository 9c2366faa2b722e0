<?php

namespace App\Jobs;

use App\Models\Student;
use App\Services\RosterClient;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class SyncStudent implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public int $timeout = 10;

    public function __construct(public int $studentId)
    {
    }

    public function handle(RosterClient $roster): void
    {
        $student = Student::find($this->studentId);
        if ($student === null) {
            return;
        }
        $roster->pushStudent($student->id, $student->only(['name', 'email']));
    }
}
