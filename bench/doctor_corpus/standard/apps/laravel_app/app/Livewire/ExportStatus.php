<?php

namespace App\Livewire;

use App\Models\OrderExport;
use Illuminate\Support\Facades\Bus;
use Livewire\Attributes\Computed;
use Livewire\Component;

class ExportStatus extends Component
{
    public OrderExport $export;

    // Reads the batch's own progress, but PlanOrderExport adds its ranges slice by slice.
    #[Computed]
    public function percent(): int
    {
        return Bus::findBatch($this->export->batch_id)?->progress() ?? 0;
    }

    public function render()
    {
        return view('livewire.export-status');
    }
}
