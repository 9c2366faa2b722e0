<?php

namespace App\Console\Commands;

use App\Jobs\PlanSubscriberImport;
use App\Models\Import;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;

class ImportSubscribers extends Command
{
    protected $signature = 'subscribers:import {import}';

    public function handle(): void
    {
        $import = Import::findOrFail($this->argument('import'));

        Bus::batch([new PlanSubscriberImport($import->id)])
            ->onQueue('imports')
            ->dispatch();
    }
}
