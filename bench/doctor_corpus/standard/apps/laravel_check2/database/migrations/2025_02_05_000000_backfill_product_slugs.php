<?php

use App\Models\Product;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Str;

return new class extends Migration
{
    public function up(): void
    {
        DB::table('products')->whereNull('slug')->select('id')->orderBy('id')->chunkById(300, function ($rows) {
            $ids = $rows->pluck('id')->all();

            dispatch(static function () use ($ids) {
                foreach (Product::whereKey($ids)->whereNull('slug')->get() as $product) {
                    $product->update(['slug' => Str::slug($product->title).'-'.$product->id]);
                }
            })->onQueue('migrations');
        });
    }
};
