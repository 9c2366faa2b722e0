<?php

namespace App\Jobs;

use App\Models\Customer;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ExportCustomers implements ShouldQueue
{
    use Queueable;

    public function __construct(public int $storeId)
    {
    }

    public function handle(): string
    {
        $file = storage_path("exports/customers-{$this->storeId}.csv");
        $out = fopen($file, 'w');

        Customer::where('store_id', $this->storeId)->orderBy('id')->each(function (Customer $customer) use ($out) {
            fputcsv($out, [$customer->id, $customer->name, $customer->email, $customer->lifetime_value]);
        });

        fclose($out);

        return $file;
    }
}
