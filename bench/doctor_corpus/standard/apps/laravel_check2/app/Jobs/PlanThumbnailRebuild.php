<?php

namespace App\Jobs;

use App\Models\Product;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanThumbnailRebuild implements ShouldQueue
{
    use Batchable, Queueable;

    public function handle(): void
    {
        $first = Product::min('id');
        $last = Product::max('id');
        if ($first === null) {
            return;
        }

        $ranges = [];
        foreach (range($first, $last, 20) as $start) {
            $ranges[] = new RebuildThumbnails($start, min($start + 19, $last));
        }

        $this->batch()->add($ranges);
    }
}
