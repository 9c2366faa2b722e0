<?php

use App\Jobs\PlanOrderExport;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\Bus;

return new class extends Migration
{
    public function up(): void
    {
        Bus::batch([new PlanOrderExport(1, 1, null)])->onQueue('exports')->dispatch();
    }
};
