<?php

namespace App\Jobs;

use App\Models\Enrollment;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Support\Facades\Storage;

class IssueCertificates implements ShouldQueue
{
    use Batchable, Dispatchable, Queueable;

    public $timeout = 25;

    public function __construct(public array $enrollmentIds)
    {
    }

    public function handle(): void
    {
        $enrollments = Enrollment::whereIn('id', $this->enrollmentIds)->get();
        foreach ($enrollments as $enrollment) {
            Storage::disk('s3')->put("certificates/{$enrollment->id}.pdf", view('certificate', compact('enrollment'))->render());
            SendCertificateMail::dispatch($enrollment->id);
        }
    }
}
