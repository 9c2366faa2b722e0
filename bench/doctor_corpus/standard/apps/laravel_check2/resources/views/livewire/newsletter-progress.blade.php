<div @if ($newsletter->sent_at === null && $newsletter->batch_id) wire:poll.5s @endif>
    @if ($newsletter->batch_id === null)
        <button wire:click="send">{{ __('Send newsletter') }}</button>
    @else
        <progress max="100" value="{{ $this->percent }}"></progress>
    @endif
</div>
