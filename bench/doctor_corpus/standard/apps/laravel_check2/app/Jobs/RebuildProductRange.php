<?php

namespace App\Jobs;

use App\Models\Product;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class RebuildProductRange implements ShouldQueue
{
    use Queueable;

    public int $timeout = 30;

    public function __construct(public int $from, public int $to)
    {
    }

    public function handle(): void
    {
        Product::whereBetween('id', [$this->from, $this->to])
            ->get()
            ->each
            ->regenerateThumbnail();
    }
}
