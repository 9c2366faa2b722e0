<?php

use App\Models\Order;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Str;

return new class extends Migration
{
    public function up(): void
    {
        foreach (Order::all() as $order) {
            $order->update(['slug' => Str::slug($order->number)]);
        }
    }
};
