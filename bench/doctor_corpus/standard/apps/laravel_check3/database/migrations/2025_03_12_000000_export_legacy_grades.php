<?php

use App\Jobs\PlanGradeExport;
use App\Models\Course;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\Bus;

return new class extends Migration
{
    public function up(): void
    {
        $legacy = Course::where('legacy', true)->firstOrFail();
        Bus::batch([new PlanGradeExport($legacy->id, 0, null)])->onQueue('exports')->dispatch();
    }
};
