<?php

namespace App\Jobs;

use App\Models\Order;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class RecalculateTotals implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public function __construct(public int $from, public int $to)
    {
    }

    public function handle(): void
    {
        Order::whereBetween('id', [$this->from, $this->to])->each(function (Order $order) {
            $order->update(['total' => $order->lines()->sum('amount')]);
        });
    }
}
