<?php

namespace App\Console\Commands;

use App\Mail\NotifyEmail;
use App\User;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Mail;

class notify extends Command
{
    protected $signature = 'notify:email';

    protected $description = 'send email notify for every users every day';

    public function handle()
    {
        $emails = User::pluck('email')->toArray();
        $data = ['title' => 'programing', 'body' => 'php'];
        foreach ($emails as $email) {
            Mail::To($email)->send(new NotifyEmail($data));
        }
    }
}
