<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Schema;

return new class extends Migration
{
    public function up(): void
    {
        Schema::table('invoices', function (Blueprint $table) {
            $table->boolean('archived')->default(false);
        });

        DB::table('invoices')
            ->where('status', 'draft')
            ->where('created_at', '<', '2024-01-01')
            ->update(['status' => 'void', 'archived' => true]);
    }

    public function down(): void
    {
        Schema::table('invoices', fn (Blueprint $table) => $table->dropColumn('archived'));
    }
};
