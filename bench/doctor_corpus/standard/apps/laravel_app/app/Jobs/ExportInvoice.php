<?php

namespace App\Jobs;

use App\Models\Invoice;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Storage;

class ExportInvoice implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public function __construct(public int $invoiceId)
    {
    }

    public function handle(): void
    {
        $invoice = Invoice::findOrFail($this->invoiceId);
        Storage::disk('s3')->put("invoices/{$invoice->id}.pdf", $invoice->renderPdf());

        SendInvoiceCopy::dispatch($invoice->id);
    }
}
