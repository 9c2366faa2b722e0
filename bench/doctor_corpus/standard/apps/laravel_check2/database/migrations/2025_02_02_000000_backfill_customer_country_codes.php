<?php

use App\Services\PhoneGeo;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        $geo = app(PhoneGeo::class);

        foreach (DB::table('customers')->whereNull('country_code')->get(['id', 'phone']) as $row) {
            DB::table('customers')
                ->where('id', $row->id)
                ->update(['country_code' => $geo->countryFor($row->phone)]);
        }
    }
};
