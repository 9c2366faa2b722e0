<?php

namespace App\Http\Controllers;

use App\Jobs\ExportInvoices;
use App\Mail\OrderReceipt;
use App\Models\Order;
use App\Models\Project;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Mail;
use Illuminate\Support\Facades\Storage;

class OrderController extends Controller
{
    public function store(Request $request, Project $project)
    {
        $order = $project->orders()->create($request->validate(['customer_email' => 'required|email']));

        return redirect()->route('orders.show', $order);
    }

    public function resendReceipts(Project $project)
    {
        $orders = $project->orders()->where('status', 'paid')->get();
        foreach ($orders as $order) {
            Mail::to($order->customer_email)->send(new OrderReceipt($order));
        }

        return back()->with('status', 'Receipts sent.');
    }

    public function archiveClosed(Project $project)
    {
        $project->orders()->where('status', 'closed')->update(['archived_at' => now()]);

        return back();
    }

    public function syncRates()
    {
        $rates = Http::get('https://rates.example/latest')->json();
        Cache::put('rates', $rates);

        return back();
    }

    public function quote(Request $request)
    {
        $quote = Http::timeout(3)->get('https://carrier.example/quote', $request->only('zip', 'weight'));

        return response()->json($quote->json());
    }

    public function export(Project $project)
    {
        $export = $project->startOrderExport();

        return redirect()->route('exports.show', $export);
    }

    public function exportInvoices(Project $project)
    {
        ExportInvoices::dispatchSync($project);

        return redirect()->route('projects.show', $project);
    }

    public function notifyCustomers(Project $project)
    {
        $project->orders->each(function (Order $order) {
            $order->notifyCustomer();
        });

        return back();
    }

    public function copyAttachments(Project $project)
    {
        foreach ($project->attachments as $attachment) {
            Storage::disk('s3')->copy($attachment->path, "archive/{$attachment->path}");
        }

        return back();
    }

    public function forgetCounters()
    {
        foreach (['orders:open', 'orders:paid', 'orders:closed'] as $key) {
            Cache::forget($key);
        }

        return back();
    }
}
