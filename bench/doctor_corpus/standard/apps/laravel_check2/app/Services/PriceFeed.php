<?php

namespace App\Services;

use Illuminate\Support\Facades\Http;

class PriceFeed
{
    public function priceFor(string $sku): int
    {
        return (int) Http::timeout(5)->get("https://prices.example/sku/{$sku}")->json('cents');
    }
}
