<?php

namespace App\Jobs;

use App\Models\Enrollment;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;

class RecalculateAverages implements ShouldQueue
{
    use Dispatchable, Queueable;

    private const PAGE = 500;

    public function __construct(public int $offset = 0)
    {
    }

    public function handle(): void
    {
        $page = Enrollment::orderBy('id')->skip($this->offset)->take(self::PAGE)->get();
        foreach ($page as $enrollment) {
            $enrollment->recalculateAverage();
        }

        if ($page->count() === self::PAGE) {
            self::dispatch($this->offset + self::PAGE);
        }
    }
}
