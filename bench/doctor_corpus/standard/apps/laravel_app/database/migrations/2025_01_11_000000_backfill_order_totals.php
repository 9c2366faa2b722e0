<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        DB::table('orders')->select('id')->orderBy('id')->chunkById(200, function ($rows) {
            $ids = $rows->pluck('id')->all();
            dispatch(static function () use ($ids) {
                foreach ($ids as $id) {
                    DB::table('orders')->where('id', $id)->update([
                        'total' => DB::table('order_lines')->where('order_id', $id)->sum('amount'),
                    ]);
                }
            })->onQueue('migrations');
        });
    }
};
