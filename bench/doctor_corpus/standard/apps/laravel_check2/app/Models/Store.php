<?php

namespace App\Models;

use App\Jobs\PlanCatalogSync;
use App\Jobs\PlanNewsletterSend;
use Illuminate\Bus\Batch;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Database\Eloquent\Relations\HasMany;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Storage;
use Throwable;

class Store extends Model
{
    public function products(): HasMany
    {
        return $this->hasMany(Product::class);
    }

    public function invoices(): HasMany
    {
        return $this->hasMany(Invoice::class);
    }

    public function customers(): HasMany
    {
        return $this->hasMany(Customer::class);
    }

    public function subscribers(): HasMany
    {
        return $this->hasMany(Subscriber::class);
    }

    public function catalogSyncs(): HasMany
    {
        return $this->hasMany(CatalogSync::class);
    }

    public function newsletters(): HasMany
    {
        return $this->hasMany(Newsletter::class);
    }

    public function startCatalogSync(): CatalogSync
    {
        $sync = $this->catalogSyncs()->create(['state' => 'running']);
        $syncId = $sync->id;

        $batch = Bus::batch([new PlanCatalogSync($this->id, $syncId)])
            ->then(static function (Batch $batch) use ($syncId) {
                CatalogSync::find($syncId)?->markFinished();
            })
            ->catch(static function (Batch $batch, Throwable $e) use ($syncId) {
                CatalogSync::find($syncId)?->markFailed($e->getMessage());
            })
            ->name('catalog-sync')
            ->onQueue('catalog')
            ->dispatch();

        $sync->update(['batch_id' => $batch->id]);

        return $sync;
    }

    public function sendNewsletter(Newsletter $newsletter): void
    {
        $newsletterId = $newsletter->id;

        $batch = Bus::batch([new PlanNewsletterSend($newsletterId)])
            ->finally(static function (Batch $batch) use ($newsletterId) {
                Newsletter::whereKey($newsletterId)->update(['sent_at' => now()]);
            })
            ->onQueue('mail')
            ->dispatch();

        $newsletter->update(['batch_id' => $batch->id]);
    }

    public function republishProduct(Product $product): void
    {
        Http::withToken($this->storefront_token)
            ->put("https://storefront.example/api/products/{$product->sku}", $product->toStorefront());

        Storage::disk('s3')->copy("uploads/{$product->image}", "public/products/{$product->sku}.jpg");
    }

    public function recalculateStock(): void
    {
        $this->products()->each(fn (Product $product) => $product->refreshStock());
    }
}
