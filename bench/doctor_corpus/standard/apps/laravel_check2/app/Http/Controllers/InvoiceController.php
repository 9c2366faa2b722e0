<?php

namespace App\Http\Controllers;

use App\Jobs\BuildStatementArchive;
use App\Mail\InvoiceOverdue;
use App\Models\Invoice;
use App\Models\Store;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Mail;

class InvoiceController extends Controller
{
    public function remindOverdue(Store $store)
    {
        $store->invoices()
            ->where('status', 'overdue')
            ->with('customer')
            ->get()
            ->each(function (Invoice $invoice) {
                Mail::to($invoice->customer->email)->send(new InvoiceOverdue($invoice));
            });

        return back()->with('status', 'Reminders sent');
    }

    public function archive(Store $store)
    {
        $path = Bus::dispatchSync(new BuildStatementArchive($store->id));

        return response()->download(storage_path("app/{$path}"));
    }

    public function taxRate(Request $request): JsonResponse
    {
        $rate = Http::timeout(3)
            ->get('https://tax.example/v1/rates', ['postcode' => $request->string('postcode')])
            ->json('rate');

        return response()->json(['rate' => $rate]);
    }

    public function exchangeRate(string $currency): JsonResponse
    {
        $quote = Http::get("https://fx.example/latest/{$currency}")->json();

        return response()->json($quote);
    }

    public function validateVat(Request $request): JsonResponse
    {
        $answer = Http::acceptJson()->timeout(20)->post('https://vies.example/check', [
            'vat' => $request->input('vat_number'),
        ]);

        return response()->json(['valid' => $answer->json('valid')]);
    }

    public function statusCounts(Store $store): JsonResponse
    {
        $counts = [];
        foreach (['draft', 'sent', 'paid', 'overdue'] as $status) {
            $counts[$status] = $store->invoices()->where('status', $status)->count();
        }

        return response()->json($counts);
    }

    public function markPaid(Invoice $invoice)
    {
        $invoice->update(['status' => 'paid', 'paid_at' => now()]);

        return back();
    }
}
