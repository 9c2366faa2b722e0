<?php

namespace App\Livewire;

use App\Models\OrderExport;
use Livewire\Attributes\Computed;
use Livewire\Component;

class ExportProgress extends Component
{
    public ?OrderExport $export = null;

    #[Computed]
    public function exportState(): ?string
    {
        return $this->export?->state();
    }

    #[Computed]
    public function exportProgress(): ?int
    {
        return $this->export?->progress();
    }

    public function render()
    {
        return view('livewire.export-progress');
    }
}
