<?php

namespace App\Console\Commands;

use App\Models\Store;
use Illuminate\Console\Command;

class SyncCatalog extends Command
{
    protected $signature = 'catalog:sync {store}';

    public function handle(): void
    {
        $sync = Store::findOrFail($this->argument('store'))->startCatalogSync();

        $this->info("Catalog sync {$sync->id} started; follow it at /catalog-syncs/{$sync->id}/progress");
    }
}
