<?php

namespace App\Console\Commands;

use App\Models\Product;
use App\Notifications\LowStock;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Notification;

class NotifyLowStock extends Command
{
    protected $signature = 'stock:notify-low';

    public function handle(): void
    {
        $low = Product::with('store.owner')->where('stock', '<', 5)->get();

        $low->map(fn (Product $product) => $product->store->owner)
            ->unique('id')
            ->each(fn ($owner) => Notification::send($owner, new LowStock()));
    }
}
