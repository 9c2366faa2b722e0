<?php

use App\Models\Order;
use Illuminate\Database\Migrations\Migration;

class RetrofitFixScriptForStats extends Migration
{
    public function up()
    {
        Order::all()->map(function ($order) {
            $tickets = $order->event()->first()->tickets()->get();
            $titles = $order->orderItems()->get()->map(fn ($item) => $item->title);

            $tickets->filter(fn ($ticket) => $titles->contains($ticket->title))
                ->map(function ($ticket) use ($order) {
                    if (! $order->tickets()->where('ticket_id', $ticket->id)->exists()) {
                        $order->tickets()->attach($ticket);
                    }
                });
        });
    }
}
