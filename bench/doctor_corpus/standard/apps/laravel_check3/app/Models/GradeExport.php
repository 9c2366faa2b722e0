<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;

class GradeExport extends Model
{
    protected $guarded = [];

    public function state(): string
    {
        return $this->state;
    }

    public function progress(): int
    {
        if (! $this->total_enrollments) {
            return 0;
        }

        return (int) floor(100 * $this->exported_enrollments / $this->total_enrollments);
    }

    public function finish(): void
    {
        $this->update(['state' => 'finished']);
    }

    public function markFailed(string $reason): void
    {
        $this->update(['state' => 'failed', 'error' => $reason]);
    }
}
