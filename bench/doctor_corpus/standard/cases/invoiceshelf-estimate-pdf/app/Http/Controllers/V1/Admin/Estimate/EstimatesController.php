<?php

namespace App\Http\Controllers\V1\Admin\Estimate;

use App\Http\Controllers\Controller;
use App\Http\Requests\EstimatesRequest;
use App\Http\Resources\EstimateResource;
use App\Jobs\GenerateEstimatePdfJob;
use App\Models\Estimate;

class EstimatesController extends Controller
{
    public function store(EstimatesRequest $request)
    {
        $this->authorize('create', Estimate::class);

        $estimate = Estimate::createEstimate($request);

        GenerateEstimatePdfJob::dispatch($estimate);

        return new EstimateResource($estimate);
    }
}
