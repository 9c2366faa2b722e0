<?php

namespace App\Services;

use App\Models\Invoice;

class InvoicePdf
{
    public function render(Invoice $invoice): string
    {
        return view('pdf.invoice', ['invoice' => $invoice])->render();
    }
}
