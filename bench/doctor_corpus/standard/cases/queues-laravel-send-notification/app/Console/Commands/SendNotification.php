<?php

namespace App\Console\Commands;

use App\Models\User;
use App\Notifications\NotifyUser;
use Illuminate\Console\Command;

class SendNotification extends Command
{
    protected $signature = 'send-notification';

    public function handle()
    {
        $this->withProgressBar(
            User::all(),
            fn (User $user) => $user->notify(new NotifyUser())
        );
    }
}
