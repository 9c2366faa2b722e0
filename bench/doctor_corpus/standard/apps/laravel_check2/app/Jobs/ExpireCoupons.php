<?php

namespace App\Jobs;

use App\Models\Coupon;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ExpireCoupons implements ShouldQueue
{
    use Queueable;

    public function handle(): void
    {
        $expired = Coupon::where('expires_at', '<', now())->whereNull('expired_at')->lazyById();

        foreach ($expired as $coupon) {
            $coupon->notifyOwner();
            $coupon->update(['expired_at' => now()]);
        }
    }
}
