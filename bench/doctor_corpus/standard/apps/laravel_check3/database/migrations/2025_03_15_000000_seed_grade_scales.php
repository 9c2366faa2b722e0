<?php

use App\Models\GradeScale;
use Illuminate\Database\Migrations\Migration;

return new class extends Migration
{
    public function up(): void
    {
        foreach (['A' => 90, 'B' => 80, 'C' => 70, 'D' => 60] as $letter => $minimum) {
            GradeScale::create(['letter' => $letter, 'minimum' => $minimum]);
        }
    }
};
