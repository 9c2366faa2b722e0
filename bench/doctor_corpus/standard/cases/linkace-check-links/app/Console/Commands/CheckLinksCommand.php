<?php

namespace App\Console\Commands;

use App\Models\Link;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\Http;

class CheckLinksCommand extends Command
{
    protected $signature = 'links:check {--limit=} {--noWait}';

    protected int $limit = 100;

    protected int $offset = 0;

    public function handle(): void
    {
        $this->offset = Cache::get('link_check_offset', 0);

        $links = Link::orderBy('id')->offset($this->offset)->limit($this->limit)->get();
        if ($links->isEmpty()) {
            Cache::forget('link_check_offset');
            return;
        }

        $links->each(function (Link $link) {
            $this->checkLink($link);

            if ($this->option('noWait') === null) {
                sleep(1);
            }
        });

        Cache::forever('link_check_offset', $this->offset + $this->limit);
    }

    protected function checkLink(Link $link): void
    {
        $response = Http::timeout(20)->get($link->url);

        if ($response->status() >= 400) {
            $link->status = Link::STATUS_BROKEN;
            $link->save();
        }
    }
}
