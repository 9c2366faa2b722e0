<?php

namespace App\Jobs;

use App\Models\Invoice;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanInvoiceExport implements ShouldQueue
{
    use Batchable, Queueable;

    public function __construct(public int $projectId)
    {
    }

    public function handle(): void
    {
        $jobs = [];
        foreach (Invoice::where('project_id', $this->projectId)->cursor() as $invoice) {
            $jobs[] = new ExportInvoice($invoice->id);
        }
        $this->batch()->add($jobs);
    }
}
