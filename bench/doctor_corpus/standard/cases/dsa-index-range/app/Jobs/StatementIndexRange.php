<?php

namespace App\Jobs;

use App\Models\Statement;
use App\Services\StatementSearchService;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

class StatementIndexRange implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public int $max, public int $min, public int $chunk) {}

    public function handle(StatementSearchService $statement_search_service): void
    {
        $difference = $this->max - $this->min;
        if ($difference <= $this->chunk) {
            $range = range($this->min, $this->max);
            $statements = Statement::on('mysql::read')->whereIn('id', $range)->get();
            $statement_search_service->bulkIndexStatements($statements);
        } else {
            $break = ceil($difference / 2);
            self::dispatch($this->max, ($this->max - $break), $this->chunk);
            self::dispatch(($this->max - $break - 1), $this->min, $this->chunk);
        }
    }
}
