<?php

use App\Jobs\RecalculateAverages;
use Illuminate\Database\Migrations\Migration;

return new class extends Migration
{
    public function up(): void
    {
        RecalculateAverages::dispatch(0);
    }
};
