<?php

namespace App\Console\Commands;

use App\Services\Menu;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Cache;

class WarmMenus extends Command
{
    protected $signature = 'menus:warm';

    public function handle(Menu $menu): void
    {
        foreach (['en', 'es', 'fr', 'de'] as $locale) {
            Cache::put("menu.{$locale}", $menu->build($locale), now()->addHour());
        }
    }
}
