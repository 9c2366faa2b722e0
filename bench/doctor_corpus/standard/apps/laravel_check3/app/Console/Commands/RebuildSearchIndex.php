<?php

namespace App\Console\Commands;

use App\Models\Course;
use Illuminate\Console\Command;

class RebuildSearchIndex extends Command
{
    protected $signature = 'school:reindex';

    public function handle(): void
    {
        Course::all()->each->reindex();
        $this->info('Search index rebuilt.');
    }
}
