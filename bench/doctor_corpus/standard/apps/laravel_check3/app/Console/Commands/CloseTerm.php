<?php

namespace App\Console\Commands;

use App\Models\Enrollment;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Storage;

class CloseTerm extends Command
{
    protected $signature = 'school:close-term {term}';

    public function handle(): void
    {
        $finished = Enrollment::where('term_id', $this->argument('term'))->get();
        $this->withProgressBar($finished, function (Enrollment $enrollment) {
            Storage::disk('s3')->move(
                "live/{$enrollment->id}.json",
                "archive/{$enrollment->id}.json",
            );
        });
    }
}
