<?php

namespace App\Jobs;

use App\Models\Project;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ComputeProjectStats implements ShouldQueue
{
    use Queueable;

    public function __construct(public Project $project)
    {
    }

    public function handle(): array
    {
        $stats = [];
        foreach ($this->project->orders()->cursor() as $order) {
            $stats[$order->status] = ($stats[$order->status] ?? 0) + $order->lines()->sum('amount');
        }

        return $stats;
    }
}
