<?php

namespace App\Services;

use App\Models\Product;
use Illuminate\Support\Facades\Http;

class SearchIndex
{
    public function upsert(Product $product): void
    {
        Http::timeout(5)->put("https://search.example/products/{$product->id}", $product->toStorefront());
    }

    public function upsertVariants(Product $product): void
    {
        Http::timeout(5)->put("https://search.example/products/{$product->id}/variants", []);
    }
}
