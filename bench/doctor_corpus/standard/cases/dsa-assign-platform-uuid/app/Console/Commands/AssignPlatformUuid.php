<?php

namespace App\Console\Commands;

use App\Models\Platform;
use Illuminate\Console\Command;
use Illuminate\Support\Str;

class AssignPlatformUuid extends Command
{
    protected $signature = 'platform:assign-uuid';

    public function handle(): void
    {
        $platforms = Platform::query()->where('uuid', '-')->get();
        foreach ($platforms as $platform) {
            $platform->uuid = Str::uuid();
            $platform->save();
        }
    }
}
