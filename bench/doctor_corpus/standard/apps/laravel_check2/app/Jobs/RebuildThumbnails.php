<?php

namespace App\Jobs;

use App\Models\Product;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class RebuildThumbnails implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 40;

    public function __construct(public int $first, public int $last)
    {
    }

    public function handle(): void
    {
        foreach (Product::whereBetween('id', [$this->first, $this->last])->cursor() as $product) {
            $product->regenerateThumbnail();
        }
    }
}
