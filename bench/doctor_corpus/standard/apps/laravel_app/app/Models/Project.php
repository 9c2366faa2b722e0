<?php

namespace App\Models;

use App\Jobs\PlanOrderExport;
use Illuminate\Bus\Batch;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Storage;
use Throwable;

class Project extends Model
{
    public function orders()
    {
        return $this->hasMany(Order::class);
    }

    public function orderExports()
    {
        return $this->hasMany(OrderExport::class);
    }

    public function attachments()
    {
        return $this->hasMany(Attachment::class);
    }

    public function startOrderExport(): OrderExport
    {
        $export = $this->orderExports()->create();
        $exportId = $export->id;

        $batch = Bus::batch([new PlanOrderExport($this->id, $exportId, null)])
            ->then(static function (Batch $batch) use ($exportId) {
                OrderExport::find($exportId)?->finish();
            })
            ->catch(static function (Batch $batch, Throwable $error) use ($exportId) {
                OrderExport::find($exportId)?->markFailed($error->getMessage());
            })
            ->onQueue('exports')
            ->dispatch();

        $export->update(['batch_id' => $batch->id]);

        return $export;
    }

    public function exportOrder(Order $order): void
    {
        Storage::disk('s3')->put("exports/{$this->id}/{$order->id}.json", $order->toJson());
    }
}
