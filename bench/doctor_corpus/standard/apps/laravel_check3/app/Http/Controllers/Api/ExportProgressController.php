<?php

namespace App\Http\Controllers\Api;

use App\Http\Controllers\Controller;
use App\Models\GradeExport;
use Illuminate\Support\Facades\Bus;

class ExportProgressController extends Controller
{
    public function show(GradeExport $export)
    {
        $batch = Bus::findBatch($export->batch_id);

        return response()->json([
            'state' => $export->state(),
            'progress' => $batch ? $batch->progress() : 100,
        ]);
    }

    public function steady(GradeExport $export)
    {
        return response()->json([
            'state' => $export->state(),
            'progress' => $export->progress(),
        ]);
    }
}
