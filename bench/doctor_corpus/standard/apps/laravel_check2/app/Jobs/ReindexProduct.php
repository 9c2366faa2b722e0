<?php

namespace App\Jobs;

use App\Models\Product;
use App\Services\SearchIndex;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ReindexProduct implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 15;

    public function __construct(public int $productId)
    {
    }

    public function handle(SearchIndex $index): void
    {
        $product = Product::find($this->productId);
        if ($product === null) {
            return;
        }

        $index->upsert($product);

        if ($product->has_variants) {
            ReindexVariants::dispatch($product->id)->onQueue('search');
        }
    }
}
