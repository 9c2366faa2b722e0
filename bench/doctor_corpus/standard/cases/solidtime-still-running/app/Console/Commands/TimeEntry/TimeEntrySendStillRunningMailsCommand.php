<?php

namespace App\Console\Commands\TimeEntry;

use App\Mail\TimeEntryStillRunningMail;
use App\Models\TimeEntry;
use Illuminate\Console\Command;
use Illuminate\Support\Carbon;
use Illuminate\Support\Collection;
use Illuminate\Support\Facades\Mail;

class TimeEntrySendStillRunningMailsCommand extends Command
{
    protected $signature = 'time-entry:send-still-running-mails {--dry-run}';

    public function handle(): int
    {
        $dryRun = (bool) $this->option('dry-run');

        TimeEntry::query()
            ->whereNull('end')
            ->where('start', '<', now()->subHours(8))
            ->whereNull('still_active_email_sent_at')
            ->with(['user'])
            ->orderBy('created_at', 'asc')
            ->chunk(500, function (Collection $timeEntries) use ($dryRun): void {
                foreach ($timeEntries as $timeEntry) {
                    if (! $dryRun) {
                        Mail::to($timeEntry->user->email)
                            ->queue(new TimeEntryStillRunningMail($timeEntry, $timeEntry->user));
                        $timeEntry->still_active_email_sent_at = Carbon::now();
                        $timeEntry->save();
                    }
                }
            });

        return self::SUCCESS;
    }
}
