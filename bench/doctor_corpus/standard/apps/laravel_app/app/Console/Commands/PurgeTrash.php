<?php

namespace App\Console\Commands;

use App\Models\Order;
use Illuminate\Console\Command;

class PurgeTrash extends Command
{
    protected $signature = 'orders:purge-trash';

    public function handle(): int
    {
        Order::onlyTrashed()->where('deleted_at', '<', now()->subDays(30))->forceDelete();

        return self::SUCCESS;
    }
}
