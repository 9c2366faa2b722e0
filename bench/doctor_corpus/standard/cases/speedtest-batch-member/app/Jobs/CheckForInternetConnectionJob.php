<?php

namespace App\Jobs;

use App\Actions\PingHostname;
use App\Enums\ResultStatus;
use App\Events\SpeedtestChecking;
use App\Events\SpeedtestFailed;
use App\Models\Result;
use Illuminate\Bus\Batchable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Queue\Queueable;
use Illuminate\Queue\Middleware\SkipIfBatchCancelled;
use Illuminate\Support\Facades\Http;

class CheckForInternetConnectionJob implements ShouldQueue
{
    use Batchable, Queueable;

    public function __construct(public Result $result)
    {
    }

    public function middleware(): array
    {
        return [new SkipIfBatchCancelled];
    }

    public function handle(): void
    {
        $this->result->update(['status' => ResultStatus::Checking]);

        SpeedtestChecking::dispatch($this->result);

        if (PingHostname::run()?->isSuccess() || $this->httpFallbackSucceeds()) {
            return;
        }

        $this->result->update(['status' => ResultStatus::Failed]);

        SpeedtestFailed::dispatch($this->result);

        $this->batch()->cancel();
    }

    protected function httpFallbackSucceeds(): bool
    {
        $response = Http::retry(3, 100)->timeout(5)->get(config('speedtest.preflight.external_ip_url'));

        return $response->ok();
    }
}
