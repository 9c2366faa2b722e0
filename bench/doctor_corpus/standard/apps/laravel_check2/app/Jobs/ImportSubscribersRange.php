<?php

namespace App\Jobs;

use App\Models\ImportRow;
use App\Models\Subscriber;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;

class ImportSubscribersRange implements ShouldQueue
{
    use Batchable, Queueable;

    public int $timeout = 30;

    public function __construct(public int $importId, public int $first, public int $last)
    {
    }

    public function handle(): void
    {
        $rows = ImportRow::where('import_id', $this->importId)
            ->whereBetween('id', [$this->first, $this->last])
            ->get();

        foreach ($rows as $row) {
            $subscriber = Subscriber::firstOrCreate(['email' => strtolower($row->email)], ['name' => $row->name]);
            if ($subscriber->wasRecentlyCreated) {
                SendWelcomeEmail::dispatch($subscriber->id);
            }
        }
    }
}
