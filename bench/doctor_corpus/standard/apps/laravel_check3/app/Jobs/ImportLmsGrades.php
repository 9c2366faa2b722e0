<?php

namespace App\Jobs;

use App\Models\Grade;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\Http;

class ImportLmsGrades implements ShouldQueue
{
    use Dispatchable, Queueable;

    public int $timeout = 30;

    public function handle(): void
    {
        $after = Cache::get('lms:grades:last-id', 0);
        $rows = Http::timeout(4)
            ->get('https://lms.example/api/grades', ['after' => $after, 'limit' => 100])
            ->json('data');

        foreach ($rows as $row) {
            Grade::updateOrCreate(['lms_id' => $row['id']], ['score' => $row['score']]);
            $after = $row['id'];
        }
        Cache::forever('lms:grades:last-id', $after);

        if (count($rows) === 100) {
            static::dispatch()->delay(now()->addSeconds(5));
        }
    }
}
