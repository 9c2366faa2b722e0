<?php

namespace App\Jobs;

use App\Models\Customer;
use App\Services\TaxRegistry;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Cache;

class BackfillTaxIds implements ShouldQueue
{
    use Queueable;

    public int $timeout = 55;

    public function handle(TaxRegistry $registry): void
    {
        $lastId = Cache::get('backfill-tax-ids:last', 0);

        $customers = Customer::where('id', '>', $lastId)->whereNull('tax_id')->orderBy('id')->limit(200)->get();
        foreach ($customers as $customer) {
            $customer->update(['tax_id' => $registry->lookup($customer->company_number)]);
            Cache::forever('backfill-tax-ids:last', $customer->id);
        }
    }
}
