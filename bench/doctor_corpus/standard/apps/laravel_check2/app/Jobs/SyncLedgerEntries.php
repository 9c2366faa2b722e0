<?php

namespace App\Jobs;

use App\Models\Invoice;
use App\Models\Setting;
use App\Services\Ledger;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class SyncLedgerEntries implements ShouldQueue
{
    use Queueable;

    public function handle(Ledger $ledger): void
    {
        $cursor = (int) Setting::where('key', 'ledger.cursor')->value('value');

        $invoices = Invoice::where('id', '>', $cursor)->where('status', 'paid')->orderBy('id')->take(250)->get();
        $invoices->each(fn (Invoice $invoice) => $ledger->post($invoice));

        if ($invoices->isNotEmpty()) {
            Setting::updateOrCreate(['key' => 'ledger.cursor'], ['value' => $invoices->last()->id]);
        }
    }
}
