<?php

namespace App\Console\Commands;

use App\Jobs\TestExceptionJob;
use App\Models\User;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;

class TestExceptionOnBatch extends Command
{
    protected $signature = 'teb';

    public function handle()
    {
        $first = User::query()->offset(0)->first();
        $second = User::query()->offset(1)->first();

        $users = User::query()->take(10)->offset(10)->get()->map(fn ($u) => new TestExceptionJob($u, false));

        Bus::batch([
            ...$users,
            [
                new TestExceptionJob($first, true),
                new TestExceptionJob($second, false),
            ],
        ])->dispatch();
    }
}
