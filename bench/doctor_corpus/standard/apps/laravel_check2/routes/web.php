<?php

use App\Http\Controllers\CustomerExportController;
use App\Http\Controllers\InvoiceController;
use App\Http\Controllers\ProductController;
use App\Http\Controllers\SyncProgressController;
use App\Livewire\CatalogSyncPanel;
use App\Livewire\NewsletterProgress;
use App\Models\Customer;
use App\Models\Invoice;
use App\Models\Store;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Route;

Route::middleware('auth')->group(function () {
    Route::post('/stores/{store}/products', [ProductController::class, 'store']);
    Route::post('/stores/{store}/products/publish', [ProductController::class, 'publishAll']);
    Route::post('/stores/{store}/products/sync', [ProductController::class, 'sync']);
    Route::post('/stores/{store}/products/stock', [ProductController::class, 'refreshStock']);
    Route::post('/stores/{store}/products/archive', [ProductController::class, 'archiveSoldOut']);
    Route::post('/products/feature', [ProductController::class, 'feature']);

    Route::post('/stores/{store}/invoices/remind', [InvoiceController::class, 'remindOverdue']);
    Route::get('/stores/{store}/invoices/archive', [InvoiceController::class, 'archive']);
    Route::get('/tax-rate', [InvoiceController::class, 'taxRate']);
    Route::get('/fx/{currency}', [InvoiceController::class, 'exchangeRate']);
    Route::post('/vat/validate', [InvoiceController::class, 'validateVat']);
    Route::get('/stores/{store}/invoices/counts', [InvoiceController::class, 'statusCounts']);
    Route::post('/invoices/{invoice}/paid', [InvoiceController::class, 'markPaid']);

    Route::get('/stores/{store}/customers/export', [CustomerExportController::class, 'download']);
    Route::post('/stores/{store}/customers/export', [CustomerExportController::class, 'build']);

    Route::get('/catalog-syncs/{sync}/progress', [SyncProgressController::class, 'show']);
    Route::get('/catalog-syncs/{sync}/batch', [SyncProgressController::class, 'raw']);

    Route::get('/stores/{store}/catalog', CatalogSyncPanel::class);
    Route::get('/newsletters/{newsletter}', NewsletterProgress::class);

    Route::post('/stores/{store}/customers/ltv', function (Store $store) {
        foreach (Customer::where('store_id', $store->id)->lazy() as $customer) {
            $customer->recalculateLifetimeValue();
        }

        return back();
    });

    Route::post('/stores/{store}/carts/clear', function (Store $store) {
        DB::table('carts')->where('store_id', $store->id)->where('updated_at', '<', now()->subDays(30))->delete();

        return back();
    });

    Route::get('/stores/{store}/dashboard', function (Store $store) {
        $totals = collect(['draft', 'sent', 'paid'])->mapWithKeys(
            fn (string $status) => [$status => Invoice::where('store_id', $store->id)->where('status', $status)->sum('total_cents')]
        );

        return view('dashboard', ['store' => $store, 'totals' => $totals]);
    });

    Route::post('/stores/{store}/invoices/void-drafts', function (Store $store) {
        Invoice::where('store_id', $store->id)->where('status', 'draft')->get()->map(function (Invoice $invoice) {
            $invoice->update(['status' => 'void']);
            Http::post('https://ledger.example/void', ['invoice' => $invoice->number]);
        });

        return back();
    });
});
