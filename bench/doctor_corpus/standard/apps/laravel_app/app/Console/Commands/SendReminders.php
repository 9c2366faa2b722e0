<?php

namespace App\Console\Commands;

use App\Models\User;
use App\Notifications\UnpaidOrdersReminder;
use Illuminate\Console\Command;

class SendReminders extends Command
{
    protected $signature = 'orders:send-reminders';

    public function handle(): int
    {
        foreach (User::whereHas('unpaidOrders')->lazy() as $user) {
            $user->notify(new UnpaidOrdersReminder());
        }

        return self::SUCCESS;
    }
}
