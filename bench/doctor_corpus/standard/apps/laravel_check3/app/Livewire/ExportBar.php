<?php

namespace App\Livewire;

use App\Models\GradeExport;
use Illuminate\Support\Facades\Bus;
use Livewire\Attributes\Computed;
use Livewire\Component;

class ExportBar extends Component
{
    public ?GradeExport $export = null;

    #[Computed]
    public function exportState(): ?string
    {
        return $this->export?->state();
    }

    #[Computed]
    public function exportProgress(): ?int
    {
        $batch = Bus::findBatch($this->export->batch_id);

        return $batch?->progress();
    }

    public function render()
    {
        return view('livewire.export-bar');
    }
}
