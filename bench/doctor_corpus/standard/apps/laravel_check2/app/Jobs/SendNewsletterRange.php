<?php

namespace App\Jobs;

use App\Mail\NewsletterMail;
use App\Models\Newsletter;
use App\Models\Subscriber;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Support\Facades\Mail;

class SendNewsletterRange implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 45;

    public function __construct(public int $newsletterId, public int $first, public int $last)
    {
    }

    public function handle(): void
    {
        $newsletter = Newsletter::findOrFail($this->newsletterId);

        $subscribers = Subscriber::where('store_id', $newsletter->store_id)
            ->where('confirmed', true)
            ->whereBetween('id', [$this->first, $this->last])
            ->whereDoesntHave('deliveries', fn ($q) => $q->where('newsletter_id', $this->newsletterId))
            ->get();

        foreach ($subscribers as $subscriber) {
            Mail::to($subscriber->email)->send(new NewsletterMail($newsletter, $subscriber));
            $subscriber->deliveries()->create(['newsletter_id' => $this->newsletterId]);
        }
    }
}
