<?php

namespace App\Jobs;

use App\Models\Customer;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class RecalculateLoyaltyPoints implements ShouldQueue
{
    use Queueable;

    public int $timeout = 600;

    public function handle(): void
    {
        Customer::with('orders')->chunk(500, function ($customers) {
            foreach ($customers as $customer) {
                $customer->recalculatePoints();
            }
        });
    }
}
