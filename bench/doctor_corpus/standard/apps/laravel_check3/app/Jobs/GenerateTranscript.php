<?php

namespace App\Jobs;

use App\Models\Enrollment;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Support\Facades\Storage;

class GenerateTranscript implements ShouldQueue
{
    use Dispatchable, Queueable;

    public function __construct(public int $studentId)
    {
    }

    public function handle(): void
    {
        $pages = [];
        $enrollments = Enrollment::where('student_id', $this->studentId)->get();
        foreach ($enrollments as $enrollment) {
            $pages[] = Storage::disk('s3')->get("grades/{$enrollment->course_id}/{$enrollment->id}.html");
        }
        Storage::put("transcripts/{$this->studentId}.pdf", implode("\n", $pages));
    }
}
