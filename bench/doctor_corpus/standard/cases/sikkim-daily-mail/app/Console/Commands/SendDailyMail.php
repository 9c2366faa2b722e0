<?php

namespace App\Console\Commands;

use App\Notifications\DailyMailNotification;
use App\Subscription;
use Illuminate\Console\Command;

class SendDailyMail extends Command
{
    protected $signature = 'send:dailyMail';

    public function handle()
    {
        foreach (Subscription::query()
                     ->where('active', true)
                     ->whereNotNull('email_verified_at')->get() as $sub) {
            $sub->notify((new DailyMailNotification())->onQueue('dailyMail'));
        }
    }
}
