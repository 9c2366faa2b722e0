<?php

use App\Models\Invoice;
use Illuminate\Database\Migrations\Migration;

return new class extends Migration
{
    public function up(): void
    {
        Invoice::query()->lazyById(500)->each(function (Invoice $invoice) {
            $invoice->forceFill([
                'net_cents' => (int) round($invoice->total_cents / (1 + $invoice->tax_rate)),
            ])->save();
        });
    }
};
