<?php

namespace App\Http\Controllers;

use App\Models\CatalogSync;
use Illuminate\Http\JsonResponse;
use Illuminate\Support\Facades\Bus;

class SyncProgressController extends Controller
{
    public function show(CatalogSync $sync): JsonResponse
    {
        return response()->json([
            'state' => $sync->state(),
            'progress' => $sync->progress(),
        ]);
    }

    public function raw(CatalogSync $sync): JsonResponse
    {
        $batch = Bus::findBatch($sync->batch_id);

        return response()->json([
            'pending' => $batch?->pendingJobs,
            'progress' => $batch?->progress(),
        ]);
    }
}
