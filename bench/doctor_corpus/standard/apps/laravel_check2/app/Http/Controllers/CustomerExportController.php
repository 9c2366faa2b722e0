<?php

namespace App\Http\Controllers;

use App\Jobs\ExportCustomers;
use App\Jobs\PlanCustomerExport;
use App\Models\Store;
use Illuminate\Support\Facades\Bus;

class CustomerExportController extends Controller
{
    public function download(Store $store)
    {
        $file = dispatch_sync(new ExportCustomers($store->id));

        return response()->download($file)->deleteFileAfterSend();
    }

    public function build(Store $store)
    {
        $batch = Bus::batch([new PlanCustomerExport($store->id)])->onQueue('exports')->dispatch();

        while (! $batch->fresh()->finished()) {
            sleep(1);
        }

        return response()->download(storage_path("exports/customers-{$store->id}.csv"));
    }
}
