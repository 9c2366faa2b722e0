<?php

namespace App\Models;

use App\Jobs\PlanGradeExport;
use Illuminate\Bus\Batch;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Database\Eloquent\Relations\HasMany;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Storage;
use Throwable;

class Course extends Model
{
    protected $guarded = [];

    public function enrollments(): HasMany
    {
        return $this->hasMany(Enrollment::class);
    }

    public function gradeExports(): HasMany
    {
        return $this->hasMany(GradeExport::class);
    }

    public function terms(): HasMany
    {
        return $this->hasMany(Term::class);
    }

    public function startGradeExport(): GradeExport
    {
        $export = $this->gradeExports()->create(['state' => 'running']);
        $exportId = $export->id;

        $batch = Bus::batch([new PlanGradeExport($this->id, $exportId, null)])
            ->then(static function (Batch $batch) use ($exportId) {
                GradeExport::find($exportId)?->finish();
            })
            ->catch(static function (Batch $batch, Throwable $e) use ($exportId) {
                GradeExport::find($exportId)?->markFailed($e->getMessage());
            })
            ->name('grade-export')
            ->onQueue('exports')
            ->dispatch();

        $export->update(['batch_id' => $batch->id]);

        return $export;
    }

    public function exportGrade(Enrollment $enrollment): void
    {
        $pdf = view('grades.sheet', ['enrollment' => $enrollment])->render();
        Storage::disk('s3')->put("grades/{$this->id}/{$enrollment->id}.html", $pdf);
    }

    public function reindex(): void
    {
        app('search')->index('courses')->upsert($this->toSearchableArray());
    }
}
