<?php

namespace App\Console\Commands;

use App\Mail\WeeklyDigest;
use App\Models\Student;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Mail;

class SendWeeklyDigest extends Command
{
    protected $signature = 'school:weekly-digest';

    protected $description = 'Mail the weekly digest to every subscribed student';

    public function handle(): int
    {
        Student::query()
            ->where('wants_digest', true)
            ->chunk(200, function ($students) {
                foreach ($students as $student) {
                    Mail::to($student->email)->send(new WeeklyDigest($student));
                }
            });

        return self::SUCCESS;
    }
}
