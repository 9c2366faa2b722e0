<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;

class CatalogSync extends Model
{
    protected $guarded = [];

    public function state(): string
    {
        return $this->state;
    }

    // Measured against the total the first coordinator recorded once, never the batch's own count.
    public function progress(): int
    {
        if (! $this->total) {
            return 0;
        }

        return (int) min(100, floor($this->synced_products * 100 / $this->total));
    }

    public function markFinished(): void
    {
        $this->update(['state' => 'finished', 'finished_at' => now()]);
    }

    public function markFailed(string $message): void
    {
        $this->update(['state' => 'failed', 'error' => $message]);
    }
}
