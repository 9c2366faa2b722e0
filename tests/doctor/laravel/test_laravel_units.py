"""Smaller Laravel cases found while checking real applications by hand."""

from __future__ import annotations

from pathlib import Path

from doctor.conftest import LARAVEL_APP, write
from tenure.doctor import diagnose
from tenure.doctor.laravel.deploy import find_artisan
from tenure.doctor.laravel.php import EnvFiles, Evaluator, parse, returned_array

JOB = """<?php
namespace App\\Jobs;

use GuzzleHttp\\Client;
use Illuminate\\Contracts\\Queue\\ShouldQueue;
use Illuminate\\Support\\Facades\\Http;

class Fetch implements ShouldQueue
{
    public $tries = 3;

    public function handle(): void
    {
        $unused = new Client(['handler' => null]);
        Http::retry(3, 100, throw: false)->get('https://api.example/');
    }
}
"""


def project(root: Path, files: dict[str, str]) -> Path:
    return write(root, {**LARAVEL_APP, **files})


def test_http_retry_multiplies_the_bound_and_unused_clients_send_nothing(tmp_path: Path) -> None:
    root = project(tmp_path, {"app/Jobs/Fetch.php": JOB, "Procfile": "worker: php artisan "
                              "queue:work --timeout=80\n"})  # fmt: skip
    rules = [(f.rule, f.location.line) for f in diagnose(None, str(root), history=False).findings]
    # 3 tries x 30 s default = 90 s >= 80 s; the Guzzle client is never used to send.
    assert ("laravel-client-timeout-not-below-job", 15) in rules
    assert not any(rule == "laravel-client-timeout-missing" for rule, _ in rules)


def test_find_artisan_reads_connection_queues_and_flags() -> None:
    found = find_artisan(["sh", "-c", "cd /app && php artisan queue:work sqs --queue=a,b --once"])
    assert found == ("queue:work", "sqs", {"queue": "a,b", "once": ""})
    assert find_artisan(["php", "artisan", "migrate"]) is None


def test_evaluator_resolves_casts_min_max_and_arithmetic(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=300\nB='x y' # note\nEMPTY=\n")
    env = EnvFiles(str(tmp_path), str(tmp_path))
    source = b"<?php return ['t' => min(max((int) env('A', 1), 10), 60 * 10), 'u' => env('Z')];"
    array = returned_array(parse(source))
    assert array is not None
    ev = Evaluator(env, "config/x.php")
    from tenure.doctor.laravel.php import array_get

    t = array_get(array, "t")
    u = array_get(array, "u")
    assert t is not None and u is not None
    resolved = ev.eval(t)
    assert resolved.value == 300 and resolved.source.path == ".env"
    assert not ev.eval(u).known
    assert env.get("B") is not None and env.get("B").value == "x y"  # type: ignore[union-attr]
    assert env.get("EMPTY") is not None


def test_script_workers_across_backslash_continued_lines() -> None:
    """Cut from taiga-back docker/async_entrypoint.sh: the command spans three lines."""
    from tenure.doctor.laravel.deploy import logical_lines, read_workers
    from tenure.doctor.walk import Tree

    script = (
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        "exec gosu app php artisan queue:work redis \\\n"
        "    --timeout=120 \\\n    --tries=3\n"
    )
    assert list(logical_lines(script))[-1] == (
        3,
        "exec gosu app php artisan queue:work redis --timeout=120 --tries=3",
    )
    (worker,) = read_workers(Tree("/nowhere"), [("docker/entrypoint.sh", script)])[0]
    assert worker.source.line == 3 and worker.options["timeout"] == "120"
    assert worker.connection == "redis"


def test_scheduled_workers_from_config_variables_and_literals() -> None:
    """FreeScout's kernel passes a variable assigned config('app.queue_work_params'), twice;
    a Laravel 11 routes/console.php passes an array literal to the Schedule facade."""
    from pathlib import Path

    from tenure.doctor.laravel.php import parse
    from tenure.doctor.laravel.schedule import scheduled_workers

    root = str(Path(__file__).parent / "fixtures" / "scheduled_worker_freescout")
    kernel = parse((Path(root) / "app/Console/Kernel.php").read_bytes())
    (worker,) = scheduled_workers(root, root, "app/Console/Kernel.php", kernel)
    assert str(worker.source) == "config/app.php:6"
    assert worker.options["timeout"] == "1800" and worker.queues == ("emails", "default")
    routes = parse((Path(root) / "routes/console.php").read_bytes())
    (literal,) = scheduled_workers(root, root, "routes/console.php", routes)
    assert str(literal.source) == "routes/console.php:5" and literal.options["timeout"] == "45"
