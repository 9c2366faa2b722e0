<?php

use App\Jobs\RecalculateTotals;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        DB::table('orders')->select('id')->orderBy('id')->chunkById(500, function ($rows) {
            RecalculateTotals::dispatch($rows->first()->id, $rows->last()->id);
        });
    }
};
