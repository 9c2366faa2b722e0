<?php

namespace App\Jobs;

use App\Models\ActivityLog;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PruneOldLogs implements ShouldQueue
{
    use Queueable;

    public int $timeout = 30;

    public function handle(): void
    {
        ActivityLog::where('created_at', '<', now()->subDays(90))->delete();
    }
}
