<?php

namespace App\Jobs;

use App\Models\Customer;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Http;

class SyncCustomers implements ShouldQueue
{
    use Queueable;

    public int $timeout = 1800;

    public function handle(): void
    {
        Customer::query()->lazy()->each(function (Customer $customer) {
            $response = Http::timeout(10)->get("https://crm.example/customers/{$customer->crm_id}");
            $customer->update(['crm_data' => $response->json()]);
        });
    }
}
