<?php

namespace App\Jobs;

use App\Models\Product;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Cache;

class ReindexProducts implements ShouldQueue
{
    use Queueable;

    public int $timeout = 60;

    public function handle(): void
    {
        $lastId = Cache::get('reindex:last_id', 0);
        $products = Product::where('id', '>', $lastId)->orderBy('id')->limit(500)->get();
        if ($products->isEmpty()) {
            Cache::forget('reindex:last_id');
            return;
        }

        foreach ($products as $product) {
            $product->searchable();
        }
        Cache::put('reindex:last_id', $products->last()->id);

        self::dispatch();
    }
}
