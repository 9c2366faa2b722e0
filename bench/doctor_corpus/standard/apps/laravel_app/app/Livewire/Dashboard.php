<?php

namespace App\Livewire;

use App\Jobs\ComputeProjectStats;
use App\Models\Order;
use App\Models\Project;
use Livewire\Component;

class Dashboard extends Component
{
    public Project $project;

    public array $stats = [];

    public function refreshAll(): void
    {
        foreach (Order::where('status', 'pending')->get() as $order) {
            $order->refreshShippingStatus();
        }
    }

    public function computeStats(): void
    {
        $this->stats = ComputeProjectStats::dispatchSync($this->project);
    }

    public function render()
    {
        return view('livewire.dashboard');
    }
}
