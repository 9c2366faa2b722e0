<?php

namespace App\Jobs;

use App\Models\Pirep;
use App\Services\PirepArchiveService;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Log;
use Throwable;

class BackfillPirepsParentFlight implements ShouldQueue
{
    use Dispatchable;
    use InteractsWithQueue;
    use Queueable;

    public int $timeout = 3600;

    public function handle(PirepArchiveService $archiveService): void
    {
        Pirep::where('state', Pirep::ACCEPTED)
            ->whereDoesntHave('metadata')
            ->chunkById(500, function ($pireps) use ($archiveService): void {
                foreach ($pireps as $pirep) {
                    try {
                        $archiveService->save($pirep, $archiveService->build($pirep));
                    } catch (Throwable $e) {
                        Log::error('Failed to backfill pirep archive', ['pirep_id' => $pirep->id]);
                    }
                }
            });
    }
}
