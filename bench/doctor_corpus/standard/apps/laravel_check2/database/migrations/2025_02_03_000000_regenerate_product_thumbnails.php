<?php

use App\Jobs\RebuildProductRange;
use App\Models\Product;
use Illuminate\Database\Migrations\Migration;

return new class extends Migration
{
    public function up(): void
    {
        Product::query()->select('id')->chunkById(100, function ($products) {
            RebuildProductRange::dispatch($products->first()->id, $products->last()->id);
        });
    }
};
