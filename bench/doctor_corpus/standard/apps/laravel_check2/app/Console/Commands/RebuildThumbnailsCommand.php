<?php

namespace App\Console\Commands;

use App\Jobs\PlanThumbnailRebuild;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;

class RebuildThumbnailsCommand extends Command
{
    protected $signature = 'thumbnails:rebuild';

    public function handle(): void
    {
        $batch = Bus::batch([new PlanThumbnailRebuild()])->name('thumbnails')->dispatch();

        $this->line("Batch {$batch->id} queued.");
    }
}
