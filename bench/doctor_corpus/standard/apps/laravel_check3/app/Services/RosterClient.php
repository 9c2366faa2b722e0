<?php

namespace App\Services;

use Illuminate\Support\Facades\Http;

class RosterClient
{
    public function pushStudent(int $studentId, array $data): void
    {
        Http::withToken(config('services.roster.token'))
            ->timeout(4)
            ->put("https://roster.example/api/students/{$studentId}", $data);
    }
}
