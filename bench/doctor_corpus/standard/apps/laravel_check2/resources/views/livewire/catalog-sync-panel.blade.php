<div @if ($this->syncState === 'running') wire:poll.2s @endif>
    <button wire:click="start">{{ __('Sync catalog') }}</button>
    @if ($this->syncState === 'running')
        <progress class="w-full" max="100" value="{{ $this->syncProgress }}"></progress>
    @elseif ($this->syncState === 'finished')
        <p>{{ __('The catalog is on the storefront.') }}</p>
    @elseif ($this->syncState === 'failed')
        <p>{{ __('The sync failed. Start it again.') }}</p>
    @endif
</div>
