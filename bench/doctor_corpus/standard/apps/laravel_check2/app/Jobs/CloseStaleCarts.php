<?php

namespace App\Jobs;

use App\Models\Cart;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class CloseStaleCarts implements ShouldQueue
{
    use Queueable;

    public function handle(): void
    {
        Cart::query()
            ->where('status', 'open')
            ->where('updated_at', '<', now()->subDays(14))
            ->update(['status' => 'abandoned']);
    }
}
