<?php

namespace App\Jobs;

use App\Models\Product;
use App\Services\SearchIndex;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ReindexVariants implements ShouldQueue
{
    use Queueable;

    public int $timeout = 15;

    public function __construct(public int $productId)
    {
    }

    public function handle(SearchIndex $index): void
    {
        $index->upsertVariants(Product::findOrFail($this->productId));
    }
}
