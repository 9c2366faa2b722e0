<?php

namespace App\Models;

use App\Mail\MonthlyStatement;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Support\Facades\Mail;

class Customer extends Model
{
    protected $guarded = [];

    public function invoices()
    {
        return $this->hasMany(Invoice::class);
    }

    public function orders()
    {
        return $this->hasMany(Order::class);
    }

    public function sendStatement(): void
    {
        Mail::to($this->email)->send(new MonthlyStatement($this, $this->invoices()->latest()->limit(12)->get()));
    }

    public function recalculateLifetimeValue(): void
    {
        $this->update(['lifetime_value' => $this->orders()->sum('total_cents')]);
    }

    public function recalculatePoints(): void
    {
        $points = $this->orders->sum(fn (Order $order) => intdiv($order->total_cents, 100));
        $this->forceFill(['points' => $points])->save();
    }
}
