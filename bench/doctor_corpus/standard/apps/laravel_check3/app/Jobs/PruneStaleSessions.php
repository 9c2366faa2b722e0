<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Support\Facades\DB;

class PruneStaleSessions implements ShouldQueue
{
    use Dispatchable, Queueable;

    public function handle(): void
    {
        DB::table('sessions')
            ->where('last_activity', '<', now()->subDays(30)->getTimestamp())
            ->delete();
    }
}
