<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Carbon;
use Illuminate\Support\Facades\DB;

class StatementDeleteChunk implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public int $min, public int $max, public int $chunk, public string $date) {}

    public function handle(): void
    {
        $end = min($this->min + $this->chunk, $this->max);

        if ($end < $this->max && $this->attempts() === 1) {
            $next_min = $this->min + $this->chunk + 1;
            self::dispatch($next_min, $this->max, $this->chunk, $this->date);
        }

        $startOfDay = Carbon::parse($this->date)->startOfDay();

        DB::table('statements_beta')
            ->where('id', '>=', $this->min)
            ->where('id', '<=', $end)
            ->where('created_at', '>=', $startOfDay)
            ->where('created_at', '<', $startOfDay->copy()->addDay())
            ->delete();
    }
}
