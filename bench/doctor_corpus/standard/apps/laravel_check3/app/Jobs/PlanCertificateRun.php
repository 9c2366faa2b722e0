<?php

namespace App\Jobs;

use App\Models\Enrollment;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class PlanCertificateRun implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public function __construct(public int $courseId)
    {
    }

    public function handle(): void
    {
        $ids = Enrollment::where('course_id', $this->courseId)
            ->where('passed', true)
            ->pluck('id');

        foreach ($ids->chunk(25) as $chunk) {
            $this->batch()->add([new IssueCertificates($chunk->values()->all())]);
        }
    }
}
