<?php

namespace App\Console\Commands;

use App\Jobs\JobA;
use Illuminate\Bus\Batch;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Log;
use Throwable;

class batchJobCommand extends Command
{
    protected $signature = 'batchJobCommand';

    protected $description = 'Command description';

    public function handle()
    {
        $batch = Bus::batch([
            new JobA(1),
            new JobA(2),
            new JobA(3),
        ])->then(function (Batch $batch) {
            Log::info('All jobs completed successfully...');
        })->catch(function (Batch $batch, Throwable $e) {
            //
        })
            ->onQueue('booking')
            ->dispatch();
    }
}
