<?php

use App\Jobs\PlanSearchReindex;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Schema;

return new class extends Migration
{
    public function up(): void
    {
        Schema::table('products', function (Blueprint $table) {
            $table->string('search_title')->nullable();
        });

        Bus::batch([new PlanSearchReindex()])->name('reindex after search_title')->dispatch();
    }
};
