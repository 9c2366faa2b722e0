<?php

namespace App\Services;

class Menu
{
    public function build(string $locale): array
    {
        return trans('menu', [], $locale);
    }
}
