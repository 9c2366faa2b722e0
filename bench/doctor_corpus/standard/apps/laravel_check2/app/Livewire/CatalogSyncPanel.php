<?php

namespace App\Livewire;

use App\Models\CatalogSync;
use App\Models\Store;
use Livewire\Attributes\Computed;
use Livewire\Component;

class CatalogSyncPanel extends Component
{
    public Store $store;

    public ?CatalogSync $sync = null;

    public function mount(Store $store): void
    {
        $this->store = $store;
        $this->sync = $store->catalogSyncs()->latest()->first();
    }

    public function start(): void
    {
        $this->authorize('update', $this->store);
        $this->sync = $this->store->startCatalogSync();
    }

    public function retryFailed(): void
    {
        $this->authorize('update', $this->store);
        foreach ($this->store->products()->whereNotNull('sync_error')->cursor() as $product) {
            $product->pushToStorefront();
        }
    }

    public function rename(string $title): void
    {
        $this->store->update(['title' => trim($title)]);
    }

    #[Computed]
    public function syncState(): ?string
    {
        return $this->sync?->fresh()->state();
    }

    #[Computed]
    public function syncProgress(): ?int
    {
        return $this->sync?->fresh()->progress();
    }

    public function render()
    {
        return view('livewire.catalog-sync-panel');
    }
}
