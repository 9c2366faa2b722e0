<?php

use App\Models\Invoice;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\Storage;

return new class extends Migration
{
    public function up(): void
    {
        Invoice::whereNotNull('pdf_path')->chunk(100, function ($invoices) {
            foreach ($invoices as $invoice) {
                Storage::disk('s3')->copy($invoice->pdf_path, "invoices/{$invoice->store_id}/{$invoice->number}.pdf");
            }
        });
    }
};
