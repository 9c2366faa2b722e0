<?php

namespace App\Http\Controllers;

use App\Http\Requests\StoreProductRequest;
use App\Models\Product;
use App\Models\Store;
use Illuminate\Http\RedirectResponse;
use Illuminate\Http\Request;

class ProductController extends Controller
{
    public function store(StoreProductRequest $request, Store $store): RedirectResponse
    {
        $product = $store->products()->create($request->validated());

        return redirect()->route('products.edit', $product);
    }

    public function publishAll(Store $store): RedirectResponse
    {
        $this->authorize('update', $store);

        foreach ($store->products as $product) {
            $store->republishProduct($product);
        }

        return back()->with('status', __('Catalog published.'));
    }

    public function sync(Store $store): RedirectResponse
    {
        $this->authorize('update', $store);
        $sync = $store->startCatalogSync();

        return redirect()->route('catalog-syncs.show', $sync);
    }

    public function refreshStock(Store $store): RedirectResponse
    {
        $this->authorize('update', $store);
        $store->recalculateStock();

        return back();
    }

    public function archiveSoldOut(Store $store): RedirectResponse
    {
        $store->products()->where('stock', 0)->whereNull('archived_at')->update(['archived_at' => now()]);

        return back();
    }

    public function feature(Request $request): RedirectResponse
    {
        $ids = $request->validate(['ids' => 'required|array|max:50'])['ids'];
        Product::whereIn('id', $ids)->update(['featured' => true]);

        return back();
    }
}
