<?php

namespace App\Console\Commands;

use App\Mail\LongstandingTwoFactorFollowUpMail;
use App\Models\User;
use Illuminate\Console\Command;
use Illuminate\Support\Collection;
use Illuminate\Support\Facades\Mail;

class NotifyUsersAboutOldBackupCodes extends Command
{
    protected $signature = 'vanguard:notify-old-backup-codes';

    public function handle(): void
    {
        $users = User::withOutdatedBackupCodes()->get();

        $this->notifyUsers($users);
    }

    private function notifyUsers(Collection $users): int
    {
        $emailCount = 0;

        $users->each(function (User $user) use (&$emailCount): void {
            Mail::to($user)->queue(new LongstandingTwoFactorFollowUpMail($user));
            $emailCount++;
        });

        return $emailCount;
    }
}
