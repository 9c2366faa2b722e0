<?php

namespace App\Jobs;

use App\Models\CatalogSync;
use App\Models\Product;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanCatalogSync implements ShouldQueue
{
    use Batchable, Queueable;

    private const RANGE = 50;

    private const RANGES_PER_SLICE = 200;

    public int $timeout = 20;

    public function __construct(public int $storeId, public int $syncId, public ?int $from = null)
    {
    }

    public function handle(): void
    {
        if ($this->batch()?->cancelled()) {
            return;
        }

        $products = Product::query()->where('store_id', $this->storeId);
        $last = $products->clone()->max('id');
        if ($last === null) {
            return;
        }

        if ($this->from === null) {
            $first = $products->clone()->min('id');
            CatalogSync::whereKey($this->syncId)->whereNull('total')->update(['total' => $last - $first + 1]);
        }

        $from = $this->from ?? $first;
        $until = min($from + self::RANGE * self::RANGES_PER_SLICE - 1, $last);

        $members = [];
        for ($start = $from; $start <= $until; $start += self::RANGE) {
            $members[] = new SyncProducts($this->storeId, $this->syncId, $start, min($start + self::RANGE - 1, $until));
        }
        $this->batch()->add($members);

        if ($until < $last) {
            $this->batch()->add([new PlanCatalogSync($this->storeId, $this->syncId, $until + 1)]);
        }
    }
}
