<?php

use App\Models\Enrollment;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Support\Facades\DB;

return new class extends Migration
{
    public function up(): void
    {
        DB::table('enrollments')->select('id')->orderBy('id')->chunkById(300, function ($rows) {
            $ids = $rows->pluck('id')->all();
            dispatch(static function () use ($ids) {
                Enrollment::whereIn('id', $ids)->get()->each->recalculateAverage();
            })->onQueue('migrations');
        });
    }
};
