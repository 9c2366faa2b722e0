<?php

namespace App\Jobs;

use App\Models\Statement;
use App\Services\StatementElasticSearchService;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Cache;

class StatementElasticSearchableChunk implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public int $min, public int $max, public int $chunk) {}

    public function handle(StatementElasticSearchService $statement_elastic_search_service): void
    {
        $stop = Cache::get('stop_reindexing', false);
        if (!$stop) {
            $end = min($this->min + $this->chunk, $this->max);

            if ($end < $this->max) {
                $next_min = $this->min + $this->chunk + 1;
                self::dispatch($next_min, $this->max, $this->chunk);
            }

            $range = range($this->min, $end);
            $statements = Statement::query()->whereIn('id', $range)->get();
            $statement_elastic_search_service->bulkIndexStatements($statements);
        }
    }
}
