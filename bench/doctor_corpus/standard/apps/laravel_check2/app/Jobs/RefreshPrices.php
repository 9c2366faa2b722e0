<?php

namespace App\Jobs;

use App\Models\Product;
use App\Services\PriceFeed;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class RefreshPrices implements ShouldQueue
{
    use Queueable;

    public int $timeout = 60;

    public function __construct(public int $storeId, public int $offset = 0)
    {
    }

    public function handle(PriceFeed $feed): void
    {
        $products = Product::where('store_id', $this->storeId)
            ->orderBy('id')
            ->skip($this->offset)
            ->take(100)
            ->get();

        foreach ($products as $product) {
            $product->update(['price_cents' => $feed->priceFor($product->sku)]);
        }

        if ($products->count() === 100) {
            self::dispatch($this->storeId, $this->offset + 100);
        }
    }
}
