<?php

namespace App\Jobs;

use App\Mail\CertificateReady;
use App\Models\Enrollment;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Support\Facades\Mail;

class SendCertificateMail implements ShouldQueue
{
    use Dispatchable, Queueable;

    public function __construct(public int $enrollmentId)
    {
    }

    public function handle(): void
    {
        $enrollment = Enrollment::with('student')->findOrFail($this->enrollmentId);
        Mail::to($enrollment->student->email)->send(new CertificateReady($enrollment));
    }
}
