<?php

namespace App\Console\Commands;

use App\Models\Invite;
use Illuminate\Console\Command;

class PurgeExpiredInvites extends Command
{
    protected $signature = 'school:purge-invites';

    public function handle(): void
    {
        $deleted = Invite::where('expires_at', '<', now())->delete();
        $this->info("Deleted {$deleted} invites.");
    }
}
