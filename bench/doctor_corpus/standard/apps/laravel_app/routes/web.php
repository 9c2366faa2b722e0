<?php

use App\Http\Controllers\OrderController;
use App\Models\Project;
use Illuminate\Support\Facades\Route;

Route::post('/projects/{project}/orders', [OrderController::class, 'store']);
Route::post('/projects/{project}/export', [OrderController::class, 'export']);

Route::post('/projects/{project}/touch-orders', function (Project $project) {
    foreach ($project->orders()->cursor() as $order) {
        $order->touch();
    }

    return back();
});

Route::get('/projects/{project}', function (Project $project) {
    return view('projects.show', ['project' => $project]);
});
