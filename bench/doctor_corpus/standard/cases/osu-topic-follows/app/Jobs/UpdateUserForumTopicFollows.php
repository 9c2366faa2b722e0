<?php

namespace App\Jobs;

use App\Models\Forum\Topic;
use App\Models\UserNotification;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class UpdateUserForumTopicFollows implements ShouldQueue
{
    use Queueable;

    public function __construct(private Topic $topic)
    {
    }

    public function handle(): void
    {
        foreach ($this->topic->watches()->with(['user', 'topic.forum'])->get() as $watch) {
            $user = $watch->user;
            $topic = $watch->topic;

            if ($user === null || $topic === null || $user->can('ForumTopicWatch', $topic)) {
                continue;
            }

            $watch->delete();
            UserNotification::batchDestroy($user->getKey(), $topic->getKey());
        }
    }
}
