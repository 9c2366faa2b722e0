<?php

namespace App\Console\Commands;

use App\Models\User;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Storage;

class SyncAvatars extends Command
{
    protected $signature = 'users:sync-avatars';

    public function handle(): int
    {
        User::whereNotNull('avatar_path')->each(function (User $user) {
            Storage::disk('s3')->put("avatars/{$user->id}.png", Storage::disk('local')->get($user->avatar_path));
        });

        return self::SUCCESS;
    }
}
