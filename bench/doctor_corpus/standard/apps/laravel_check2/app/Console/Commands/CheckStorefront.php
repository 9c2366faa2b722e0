<?php

namespace App\Console\Commands;

use Illuminate\Console\Command;
use Illuminate\Support\Facades\Http;

class CheckStorefront extends Command
{
    protected $signature = 'storefront:check';

    public function handle(): int
    {
        $response = Http::timeout(4)->get('https://storefront.example/health');

        $this->line($response->successful() ? 'up' : 'down');

        return $response->successful() ? self::SUCCESS : self::FAILURE;
    }
}
