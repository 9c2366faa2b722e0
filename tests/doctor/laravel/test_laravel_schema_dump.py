"""`php artisan schema:dump` squashes the migrations into database/schema/mysql-schema.sql: a
job_batches table created there exists (wbstack-api's Bus::batch in ScheduleStatsUpdates). The
broken twin's dump creates only `jobs`, and Bus::batch is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

COMMAND = """<?php

namespace App\\Console\\Commands;

use Illuminate\\Console\\Command;
use Illuminate\\Support\\Facades\\Bus;

class ScheduleStatsUpdates extends Command
{
    public function handle()
    {
        Bus::batch([])->allowFailures()->dispatch();
    }
}
"""
DUMP = """/*!40101 SET NAMES utf8 */;
DROP TABLE IF EXISTS `{table}`;
CREATE TABLE `{table}` (
  `id` varchar(255) COLLATE utf8mb4_unicode_ci NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
"""


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str) -> list[str]:
    files = {"app/Console/Commands/ScheduleStatsUpdates.php": COMMAND,
             "database/schema/mysql-schema.sql":
                 DUMP.replace("{table}", table)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return sites(report, "laravel-batch-table-missing")


def test_batch_table_in_the_schema_dump_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "job_batches") == []


def test_dump_without_the_batch_table_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, "jobs") == [
        "app/Console/Commands/ScheduleStatsUpdates.php:12"
    ]
