<?php

namespace App\Jobs;

use App\Models\CatalogSync;
use App\Models\Product;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class SyncProducts implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public int $tries = 3;

    public function __construct(public int $storeId, public int $syncId, public int $first, public int $last)
    {
    }

    public function handle(): void
    {
        if ($this->batch()?->cancelled()) {
            return;
        }

        Product::query()
            ->where('store_id', $this->storeId)
            ->whereBetween('id', [$this->first, $this->last])
            ->where(fn ($q) => $q->whereNull('synced_at')->orWhereColumn('updated_at', '>', 'synced_at'))
            ->get()
            ->each(fn (Product $product) => $product->pushToStorefront());

        CatalogSync::whereKey($this->syncId)->increment('synced_products', $this->last - $this->first + 1);
    }
}
