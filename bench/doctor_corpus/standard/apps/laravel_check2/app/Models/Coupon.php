<?php

namespace App\Models;

use App\Mail\CouponExpired;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Support\Facades\Mail;

class Coupon extends Model
{
    protected $guarded = [];

    public function owner()
    {
        return $this->belongsTo(Customer::class, 'customer_id');
    }

    public function notifyOwner(): void
    {
        Mail::to($this->owner->email)->send(new CouponExpired($this));
    }
}
