<?php

namespace App\Jobs;

use App\Models\Newsletter;
use App\Models\Subscriber;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class PlanNewsletterSend implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 20;

    public function __construct(public int $newsletterId, public ?int $from = null)
    {
    }

    public function handle(): void
    {
        $newsletter = Newsletter::findOrFail($this->newsletterId);
        $subscribers = Subscriber::where('store_id', $newsletter->store_id)->where('confirmed', true);

        $bounds = $subscribers->clone()->selectRaw('min(id) as low, max(id) as high')->first();
        if ($bounds->high === null) {
            return;
        }

        $from = $this->from ?? $bounds->low;
        $until = min($from + 25 * 100 - 1, $bounds->high);

        $this->batch()->add(
            collect(range($from, $until, 25))
                ->map(fn (int $start) => new SendNewsletterRange($this->newsletterId, $start, min($start + 24, $until)))
                ->all()
        );

        if ($until < $bounds->high) {
            $this->batch()->add([(new PlanNewsletterSend($this->newsletterId, $until + 1))->delay(now()->addSeconds(30))]);
        }
    }
}
