<?php

namespace App\Console\Commands;

use App\Models\Product;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Storage;

class ExportCatalog extends Command
{
    protected $signature = 'catalog:export {--disk=s3}';

    public function handle(): void
    {
        $disk = Storage::disk($this->option('disk'));

        $this->withProgressBar(Product::query()->cursor(), function (Product $product) use ($disk) {
            $disk->put("catalog/{$product->sku}.json", json_encode($product->toStorefront()));
        });
    }
}
