<?php

namespace App\Console\Commands;

use App\Models\Project;
use Illuminate\Console\Command;

class StartNightlyExport extends Command
{
    protected $signature = 'exports:nightly {project}';

    public function handle(): int
    {
        $export = Project::findOrFail($this->argument('project'))->startOrderExport();
        $this->info("Export {$export->id} started.");

        return self::SUCCESS;
    }
}
