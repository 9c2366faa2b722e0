<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

class RuntimeJob implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public function __construct(private $item)
    {
    }

    public function handle(): void
    {
        if ($this->item === 10) {
            return;
        }
        var_dump($this->item);
        RuntimeJob::dispatch($this->item + 1);
    }
}
