<?php

namespace App\Livewire;

use App\Models\Newsletter;
use Illuminate\Support\Facades\Bus;
use Livewire\Attributes\Computed;
use Livewire\Component;

class NewsletterProgress extends Component
{
    public Newsletter $newsletter;

    #[Computed]
    public function percent(): int
    {
        if (! $this->newsletter->batch_id) {
            return 0;
        }

        return Bus::findBatch($this->newsletter->batch_id)?->progress() ?? 0;
    }

    public function render()
    {
        return view('livewire.newsletter-progress');
    }

    public function send(): void
    {
        $this->authorize('send', $this->newsletter);
        $this->newsletter->store->sendNewsletter($this->newsletter);
    }
}
