<?php

namespace App\Console\Commands;

use App\Models\Customer;
use Illuminate\Console\Command;

class SendStatements extends Command
{
    protected $signature = 'statements:send';

    protected $description = 'Mail every customer with invoices their monthly statement';

    public function handle(): int
    {
        Customer::query()->whereHas('invoices')->chunkById(200, function ($customers) {
            foreach ($customers as $customer) {
                $customer->sendStatement();
            }
        });

        return self::SUCCESS;
    }
}
