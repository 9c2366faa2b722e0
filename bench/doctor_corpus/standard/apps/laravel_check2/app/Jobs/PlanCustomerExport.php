<?php

namespace App\Jobs;

use App\Models\Customer;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanCustomerExport implements ShouldQueue
{
    use Batchable, Queueable;

    public function __construct(public int $storeId)
    {
    }

    public function handle(): void
    {
        Customer::where('store_id', $this->storeId)
            ->select('id')
            ->chunkById(50, function ($customers) {
                $this->batch()->add([new ExportCustomerChunk($this->storeId, $customers->modelKeys())]);
            });
    }
}
