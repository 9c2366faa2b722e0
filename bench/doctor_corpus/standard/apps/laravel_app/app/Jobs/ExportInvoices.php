<?php

namespace App\Jobs;

use App\Models\Project;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Storage;

class ExportInvoices implements ShouldQueue
{
    use Queueable;

    public function __construct(public Project $project)
    {
    }

    public function handle(): void
    {
        $csv = '';
        foreach ($this->project->invoices()->cursor() as $invoice) {
            $csv .= "{$invoice->id},{$invoice->number},{$invoice->total}\n";
        }
        Storage::disk('s3')->put("exports/{$this->project->id}/invoices.csv", $csv);
    }
}
