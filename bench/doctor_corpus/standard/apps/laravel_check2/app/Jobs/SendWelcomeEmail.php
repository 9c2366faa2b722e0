<?php

namespace App\Jobs;

use App\Mail\Welcome;
use App\Models\Subscriber;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Mail;

class SendWelcomeEmail implements ShouldQueue
{
    use Queueable;

    public function __construct(public int $subscriberId)
    {
    }

    public function handle(): void
    {
        $subscriber = Subscriber::findOrFail($this->subscriberId);
        Mail::to($subscriber->email)->send(new Welcome($subscriber));
    }
}
