<?php

namespace App\Jobs;

use App\Models\Invoice;
use App\Services\InvoicePdf;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use ZipArchive;

class BuildStatementArchive implements ShouldQueue
{
    use Queueable;

    public function __construct(public int $storeId)
    {
    }

    public function handle(InvoicePdf $pdf): string
    {
        $path = "archives/statements-{$this->storeId}.zip";
        $zip = new ZipArchive();
        $zip->open(storage_path("app/{$path}"), ZipArchive::CREATE | ZipArchive::OVERWRITE);

        foreach (Invoice::where('store_id', $this->storeId)->cursor() as $invoice) {
            $zip->addFromString("{$invoice->number}.pdf", $pdf->render($invoice));
        }

        $zip->close();

        return $path;
    }
}
