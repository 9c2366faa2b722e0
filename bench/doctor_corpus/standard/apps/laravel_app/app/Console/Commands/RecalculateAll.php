<?php

namespace App\Console\Commands;

use App\Models\Order;
use Illuminate\Console\Command;

class RecalculateAll extends Command
{
    protected $signature = 'orders:recalculate';

    public function handle(): int
    {
        Order::query()->chunkById(500, function ($orders) {
            foreach ($orders as $order) {
                $order->update(['total' => $order->lines()->sum('amount')]);
            }
        });

        return self::SUCCESS;
    }
}
