<?php

namespace App\Jobs;

use App\Models\Customer;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Storage;

class ExportCustomerChunk implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    /** @param list<int> $customerIds */
    public function __construct(public int $storeId, public array $customerIds)
    {
    }

    public function handle(): void
    {
        $lines = Customer::whereKey($this->customerIds)
            ->get(['id', 'name', 'email'])
            ->map(fn (Customer $c) => implode(',', [$c->id, $c->name, $c->email]))
            ->implode("\n");

        Storage::put("exports/customers-{$this->storeId}/part-{$this->customerIds[0]}.csv", $lines);
    }
}
