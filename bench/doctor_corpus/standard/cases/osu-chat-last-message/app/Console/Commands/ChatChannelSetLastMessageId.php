<?php

namespace App\Console\Commands;

use App\Models\Chat\Channel;
use Illuminate\Console\Command;

class ChatChannelSetLastMessageId extends Command
{
    protected $signature = 'chat:set-last-message-id {--delay=1} {--chunk-size=1000}';

    public function handle()
    {
        $delay = (int) $this->option('delay');
        $chunkSize = (int) $this->option('chunk-size');

        $max = Channel::max('channel_id');
        Channel::where('last_message_id', null)->where('channel_id', '<=', $max)->chunkById($chunkSize, function ($chunk) use ($delay) {
            foreach ($chunk as $channel) {
                $lastMessageId = $channel->messages()->max('message_id');
                if ($lastMessageId !== null) {
                    $channel->update(['last_message_id' => $lastMessageId]);
                }
            }

            sleep($delay);
        });
    }
}
