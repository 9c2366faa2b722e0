<?php

namespace App\Console\Commands;

use App\Jobs\PlanCertificateRun;
use App\Jobs\PlanReminderRun;
use App\Jobs\PlanRosterSync;
use Illuminate\Bus\Batch;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Log;
use Throwable;

class StartNightlyRuns extends Command
{
    protected $signature = 'school:nightly {course}';

    public function handle(): void
    {
        Bus::batch([new PlanCertificateRun((int) $this->argument('course'))])
            ->name('certificates')
            ->dispatch();

        Bus::batch([new PlanReminderRun()])
            ->catch(static fn (Batch $batch, Throwable $e) => Log::error('reminders failed', ['batch' => $batch->id]))
            ->dispatch();

        Bus::batch([new PlanRosterSync()])->name('roster-sync')->dispatch();
    }
}
