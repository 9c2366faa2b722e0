<?php

namespace App\Jobs;

use App\Models\User;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Queue\Queueable;

final class VerifyAuthor implements ShouldQueue
{
    use Queueable;

    public function __construct(private User $user)
    {
    }

    public function handle(): void
    {
        $this->user->author_verified_at = now();
        $this->user->save();
    }
}
