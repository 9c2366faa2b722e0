<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;

class OrderExport extends Model
{
    protected $guarded = [];

    public function state(): string
    {
        return $this->failed_at ? 'failed' : ($this->finished_at ? 'finished' : 'running');
    }

    // Measured against the total recorded once by the first coordinator, never the batch's own.
    public function progress(): int
    {
        if (! $this->total_orders) {
            return 0;
        }

        return (int) floor(100 * $this->exported_orders / $this->total_orders);
    }

    public function finish(): void
    {
        $this->update(['finished_at' => now()]);
    }

    public function markFailed(string $message): void
    {
        $this->update(['failed_at' => now(), 'error' => $message]);
    }
}
