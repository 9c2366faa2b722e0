<?php

namespace App\Jobs;

use App\Models\ImportRow;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanSubscriberImport implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 20;

    public function __construct(public int $importId)
    {
    }

    public function handle(): void
    {
        $rows = ImportRow::where('import_id', $this->importId);
        [$low, $high] = [$rows->clone()->min('id'), $rows->clone()->max('id')];
        if ($low === null) {
            return;
        }

        $jobs = [];
        for ($start = $low; $start <= $high; $start += 100) {
            $jobs[] = new ImportSubscribersRange($this->importId, $start, min($start + 99, $high));
        }
        $this->batch()->add($jobs);
    }
}
