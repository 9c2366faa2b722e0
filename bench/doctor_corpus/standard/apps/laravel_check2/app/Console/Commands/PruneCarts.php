<?php

namespace App\Console\Commands;

use App\Models\Cart;
use Illuminate\Console\Command;

class PruneCarts extends Command
{
    protected $signature = 'carts:prune {--days=90}';

    public function handle(): void
    {
        $deleted = Cart::where('status', 'abandoned')
            ->where('updated_at', '<', now()->subDays((int) $this->option('days')))
            ->delete();

        $this->info("Pruned {$deleted} carts.");
    }
}
