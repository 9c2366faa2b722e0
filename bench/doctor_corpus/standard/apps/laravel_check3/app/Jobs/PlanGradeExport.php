<?php

namespace App\Jobs;

use App\Models\Enrollment;
use App\Models\GradeExport;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

class PlanGradeExport implements ShouldQueue
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public int $timeout = 30;

    private const RANGE = 40;

    private const SLICE = 150;

    public function __construct(
        public int $courseId,
        public int $exportId,
        public ?int $from,
    ) {
    }

    public function handle(): void
    {
        if ($this->batch()?->cancelled()) {
            return;
        }

        $enrollments = Enrollment::query()->where('course_id', $this->courseId);
        $last = $enrollments->clone()->max('id');
        if ($last === null) {
            return;
        }

        if ($this->from === null) {
            $first = $enrollments->clone()->min('id');
            GradeExport::whereKey($this->exportId)->update(['total_enrollments' => $last - $first + 1]);
        }
        $from = $this->from ?? $first;
        $until = min($from + self::RANGE * self::SLICE - 1, $last);

        $jobs = [];
        for ($start = $from; $start <= $until; $start += self::RANGE) {
            $jobs[] = new ExportGrades($this->courseId, $this->exportId, $start, min($start + self::RANGE - 1, $until));
        }
        $this->batch()->add($jobs);

        if ($until < $last) {
            $this->batch()->add([new PlanGradeExport($this->courseId, $this->exportId, $until + 1)]);
        }
    }
}
