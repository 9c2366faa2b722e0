<?php

namespace App\Services;

use Illuminate\Support\Facades\Http;

class PhoneGeo
{
    public function countryFor(?string $phone): ?string
    {
        return $phone ? Http::get('https://numbers.example/lookup', ['phone' => $phone])->json('country') : null;
    }
}
