<?php

namespace App\Livewire;

use App\Models\OrderExport;
use App\Models\Project;
use Livewire\Component;

class ProjectExport extends Component
{
    public Project $project;

    public ?OrderExport $export = null;

    public string $note = '';

    // The standard's wrong example: the action waits for every order.
    public function exportNow(): void
    {
        $this->authorize('export', $this->project);
        foreach ($this->project->orders as $order) {
            $this->project->exportOrder($order);
        }
    }

    // The standard's right example: the action starts the work and returns at once.
    public function export(): void
    {
        $this->authorize('export', $this->project);
        $this->export = $this->project->startOrderExport();
    }

    public function saveNote(): void
    {
        $this->project->update(['note' => $this->note]);
    }

    public function downloadAll()
    {
        $zip = new \ZipArchive();
        $zip->open(storage_path("app/{$this->project->id}.zip"), \ZipArchive::CREATE);
        foreach ($this->project->attachments()->get() as $attachment) {
            $zip->addFromString($attachment->name, $attachment->readFromDisk());
        }
        $zip->close();

        return response()->download(storage_path("app/{$this->project->id}.zip"));
    }

    public function render()
    {
        return view('livewire.project-export');
    }
}
