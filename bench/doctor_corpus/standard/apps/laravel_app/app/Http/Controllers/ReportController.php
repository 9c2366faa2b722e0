<?php

namespace App\Http\Controllers;

use App\Models\Project;

class ReportController extends Controller
{
    public function revenue(Project $project)
    {
        $rows = [];
        foreach ($project->orders()->lazy() as $order) {
            $rows[] = [$order->id, $order->lines()->sum('amount'), $order->refunds()->sum('amount')];
        }

        return response()->streamDownload(function () use ($rows) {
            $out = fopen('php://output', 'w');
            foreach ($rows as $row) {
                fputcsv($out, $row);
            }
        }, 'revenue.csv');
    }

    public function show(Project $project)
    {
        return view('reports.show', ['project' => $project, 'count' => $project->orders()->count()]);
    }
}
