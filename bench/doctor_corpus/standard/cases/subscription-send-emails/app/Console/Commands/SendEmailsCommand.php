<?php

namespace App\Console\Commands;

use App\Jobs\TestJob;
use App\Models\Sender;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Bus;

class SendEmailsCommand extends Command
{
    protected $signature = 'send:emails';

    protected $description = 'Command description';

    public function handle(): void
    {
        Sender::select('id', 'subscriberId')->where('isSend', '0')->chunkById(1000, function ($senders) {
            Bus::dispatch(new TestJob($senders));
        });
    }
}
