<?php

namespace App\Jobs;

use App\Mail\Receipt;
use App\Models\Order;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Mail;

class SendReceipt implements ShouldQueue
{
    use Queueable;

    public int $timeout = 20;

    public function __construct(public int $orderId)
    {
    }

    public function handle(): void
    {
        $order = Order::with('customer', 'lines')->findOrFail($this->orderId);
        Mail::to($order->customer->email)->send(new Receipt($order));
    }
}
