<?php

use App\Models\Product;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\Storage;

return new class extends Migration
{
    public function up(): void
    {
        $chunks = Product::query()->whereNotNull('image')->orderBy('id')->pluck('id')->chunk(25);

        foreach ($chunks as $i => $chunk) {
            $ids = $chunk->values()->all();

            dispatch(static function () use ($ids): void {
                Product::whereKey($ids)->get()->each(function (Product $product) {
                    $hash = hash('sha256', Storage::disk('s3')->get("products/{$product->sku}.jpg"));
                    $product->update(['image_hash' => $hash]);
                });
            })->delay(now()->addSeconds($i * 2));
        }
    }
};
