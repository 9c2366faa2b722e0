<?php

namespace App\Console\Commands;

use App\Models\Customer;
use Illuminate\Console\Command;

class RecalculateLtv extends Command
{
    protected $signature = 'customers:ltv';

    public function handle(): void
    {
        Customer::all()->each->recalculateLifetimeValue();
    }
}
