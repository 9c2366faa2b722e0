<?php

namespace App\Events;

use App\Models\Result;
use Illuminate\Foundation\Events\Dispatchable;
use Illuminate\Queue\SerializesModels;

class SpeedtestChecking
{
    use Dispatchable, SerializesModels;

    public function __construct(public Result $result)
    {
    }
}
