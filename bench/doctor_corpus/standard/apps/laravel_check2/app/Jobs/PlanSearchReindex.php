<?php

namespace App\Jobs;

use App\Models\Product;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanSearchReindex implements ShouldQueue
{
    use Batchable, Queueable;

    public function handle(): void
    {
        $jobs = Product::query()->pluck('id')->map(fn (int $id) => new ReindexProduct($id));

        $this->batch()->add($jobs->all());
    }
}
