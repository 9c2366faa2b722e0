<?php

namespace App\Jobs;

use App\Models\Order;
use App\Models\OrderExport;
use App\Models\Project;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ExportOrders implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public function __construct(public int $projectId, public int $exportId, public int $first, public int $last)
    {
    }

    public function handle(): void
    {
        if ($this->batch()?->cancelled()) {
            return;
        }

        $project = Project::findOrFail($this->projectId);
        $orders = Order::where('project_id', $this->projectId)->whereBetween('id', [$this->first, $this->last])->get();
        foreach ($orders as $order) {
            $project->exportOrder($order);
        }
        OrderExport::whereKey($this->exportId)->increment('exported_orders', $this->last - $this->first + 1);
    }
}
