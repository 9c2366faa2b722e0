<?php

namespace App\Console\Commands;

use App\Jobs\Notifications\NewsPostNew;
use App\Models\Count;
use App\Models\NewsPost;
use Carbon\CarbonImmutable;
use Illuminate\Console\Command;

class NotificationsNewsPublished extends Command
{
    protected $signature = 'notifications:news-published';

    public function handle()
    {
        $lastTimestampRow = Count::lastNewsPostPublishedAtNotified();
        $publishedAt = CarbonImmutable::parse($lastTimestampRow->count);
        $pending = NewsPost::published()->where('published_at', '>', $publishedAt)->orderBy('published_at')->get();

        $pending->each(function ($newsPost) use ($lastTimestampRow) {
            (new NewsPostNew($newsPost))->dispatch();
            $lastTimestampRow->update(['count' => $newsPost->published_at->timestamp]);
        });
    }
}
