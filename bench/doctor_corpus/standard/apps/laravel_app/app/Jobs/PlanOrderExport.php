<?php

namespace App\Jobs;

use App\Models\Order;
use App\Models\OrderExport;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanOrderExport implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public function __construct(public int $projectId, public int $exportId, public ?int $from)
    {
    }

    public function handle(): void
    {
        $orders = Order::query()->where('project_id', $this->projectId);
        $last = $orders->clone()->max('id');
        if ($last === null) {
            return;
        }

        if ($this->from === null) {
            $first = $orders->clone()->min('id');
            OrderExport::whereKey($this->exportId)->update(['total_orders' => $last - $first + 1]);
        }

        $from = $this->from ?? $orders->clone()->min('id');
        $until = min($from + 50 * 200 - 1, $last);
        $jobs = collect(range($from, $until, 50))->map(function (int $start) use ($until) {
            return new ExportOrders($this->projectId, $this->exportId, $start, min($start + 49, $until));
        });
        $this->batch()->add($jobs->all());

        if ($until < $last) {
            $this->batch()->add([new PlanOrderExport($this->projectId, $this->exportId, $until + 1)]);
        }
    }
}
