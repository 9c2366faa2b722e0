<?php

namespace App\Jobs;

use App\Mail\InvoiceCopy;
use App\Models\Invoice;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Mail;

class SendInvoiceCopy implements ShouldQueue
{
    use Queueable;

    public int $timeout = 20;

    public function __construct(public int $invoiceId)
    {
    }

    public function handle(): void
    {
        $invoice = Invoice::findOrFail($this->invoiceId);
        Mail::to($invoice->customer_email)->send(new InvoiceCopy($invoice));
    }
}
