"""Acceptance 3: a 3,000-file Laravel tree is audited whole, vendor/ left out.

Its time (goal: under 10 s) is measured by `python -m bench.doctor_speed`, not asserted here:
a loaded machine makes a slow figure, not a failed test.
"""

from __future__ import annotations

import time
from pathlib import Path

from tenure.doctor import diagnose

MODEL = """<?php

namespace App\\Models\\M{g};

use Illuminate\\Database\\Eloquent\\Model;

class Thing{i} extends Model
{{
    protected $fillable = ['name', 'price'];

    public function total(): int
    {{
        return $this->price * 2 + {i};
    }}
}}
"""
JOB = """<?php

namespace App\\Jobs\\J{g};

use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Support\\Facades\\Http;

class Job{i} implements ShouldQueue
{{
    public $timeout = 30;
    public $tries = 3;

    public function handle(): void
    {{
        Http::timeout(10)->post('https://api.example/{i}', ['id' => {i}]);
        $this->more();
    }}

    private function more(): void
    {{
        logger('done {i}');
    }}
}}
"""
QUEUE = """<?php
return ['default' => env('QUEUE_CONNECTION', 'redis'),
        'connections' => ['redis' => ['driver' => 'redis', 'queue' => 'default',
                                      'retry_after' => (int) env('REDIS_QUEUE_RETRY_AFTER', 90)]]];
"""


def build(root: Path) -> None:
    (root / "artisan").write_text("<?php\n")
    (root / "composer.json").write_text("{}\n")
    (root / "config").mkdir()
    (root / "config" / "queue.php").write_text(QUEUE)
    (root / ".env.example").write_text("APP_ENV=production\nQUEUE_CONNECTION=redis\n")
    (root / "supervisord.conf").write_text(
        "[program:w]\ncommand=php artisan queue:work redis --timeout=60\nstopwaitsecs=120\n"
    )
    for i in range(2990):
        kind = "Jobs" if i % 10 == 0 else "Models"
        folder = root / "app" / kind / f"g{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        text = (JOB if kind == "Jobs" else MODEL).format(i=i, g=i // 100)
        (folder / f"F{i}.php").write_text(text)
    vendor = root / "vendor" / "laravel"  # never read: dependencies
    vendor.mkdir(parents=True)
    for i in range(200):
        (vendor / f"V{i}.php").write_text(JOB.format(i=i, g=0).replace("30", "900"))


def test_three_thousand_file_laravel_tree_is_read_whole(tmp_path: Path) -> None:
    build(tmp_path)
    started = time.perf_counter()
    report = diagnose(None, str(tmp_path), history=False)
    elapsed = time.perf_counter() - started
    print(f"\ndoctor --laravel on 2,990 .php (+200 in vendor/): {elapsed:.2f} s")
    assert report.files_read >= 2990
    assert report.findings == [], report.findings[:3]
