"""Deployment readers: each platform's spelling of its clocks, defaults with their source."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.doctor.readers import read_deployments
from tenure.doctor.readers.units import (
    UNBOUNDED,
    go_duration,
    k8s_memory_mb,
    memory_mb,
    signal_name,
    systemd_timespan,
)
from tenure.doctor.readers.worker_command import find_worker
from tenure.doctor.walk import scan

from conftest import write


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), (45, 45), ("soon", None)],
)
def test_compose_durations(text: object, seconds: float | None) -> None:
    assert go_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("1min 30s", 90), ("5m", 300), ("infinity", UNBOUNDED),
     ("2 hours", 7200), ("later", None)],
)  # fmt: skip
def test_systemd_timespans(text: str, seconds: float | None) -> None:
    assert systemd_timespan(text) == seconds


def test_memory_sizes() -> None:
    assert memory_mb("512m") == 512
    assert memory_mb("1g") == 1024
    assert memory_mb("2G") == 2048
    assert k8s_memory_mb("512Mi") == 512
    assert k8s_memory_mb("1Gi") == 1024
    assert k8s_memory_mb("1e9") == pytest.approx(953.67, abs=0.01)
    assert k8s_memory_mb("500M") == pytest.approx(476.84, abs=0.01)
    assert k8s_memory_mb("lots") is None


def test_signal_names() -> None:
    assert signal_name("TERM") == signal_name("SIGTERM") == signal_name(15) == "SIGTERM"
    assert signal_name("quit") == "SIGQUIT"


def test_worker_found_in_wrapped_commands() -> None:
    wrapped = ["sh", "-c", "cd /app && exec tenure worker --grace=20 --queues a,b && echo done"]
    args = find_worker(wrapped)
    assert args is not None
    assert args.options == {"grace": "20", "queues": "a,b"}
    module = find_worker(["python", "-m", "tenure", "worker", "--burst", "--lease", "9"])
    assert module is not None and module.options == {"burst": "", "lease": "9"}
    assert find_worker(["gunicorn", "app:wsgi"]) is None
    assert find_worker(["tenure", "doctor"]) is None


def test_compose_interpolation_from_dotenv(tmp_path: Path) -> None:
    write(tmp_path, {
        ".env": "WORKER_GRACE=25\n",
        "docker-compose.yml": (
            "services:\n"
            "  worker:\n"
            "    stop_grace_period: ${STOP_GRACE:-40s}\n"
            "    command: tenure worker --app a:app --grace ${WORKER_GRACE} --lease ${LEASE}\n"
        ),
    })  # fmt: skip
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.grace.amount == 25
    assert launch.platform_grace is not None and launch.platform_grace.amount == 40
    assert launch.lease.source.is_default  # unknown ${LEASE}: not guessed...
    assert any("--lease" in p for p in launch.problems)  # ...and said so


def test_kubernetes_prestop_spends_part_of_the_grace(tmp_path: Path) -> None:
    write(tmp_path, {"k.yaml": """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          terminationGracePeriodSeconds: 30
          containers:
            - name: w
              command: [tenure, worker, --app, "a:app", --burst]
              lifecycle:
                preStop: {sleep: {seconds: 12}}
"""})  # fmt: skip
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.platform_grace is not None
    assert launch.platform_grace.amount == 18
    assert launch.platform_grace.source.line == 9
    assert "preStop 12" in launch.platform_grace.label


def test_kubernetes_default_grace_is_sourced_as_default(tmp_path: Path) -> None:
    write(tmp_path, {"k.yaml": """\
kind: Pod
apiVersion: v1
metadata: {name: w}
spec:
  containers:
    - {name: w, command: [tenure, worker, --app, "a:app"]}
"""})  # fmt: skip
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.platform_grace is not None and launch.platform_grace.amount == 30
    assert str(launch.platform_grace.source) == "Kubernetes default"


def test_systemd_continuations_and_memory(tmp_path: Path) -> None:
    write(tmp_path, {"w.service": """\
[Service]
ExecStart=-/usr/bin/tenure worker \\
    --app a:app --concurrency 3
TimeoutSec=2min
KillMode=process
MemoryMax=1G
"""})  # fmt: skip
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.concurrency == 3
    assert launch.platform_grace is not None and launch.platform_grace.amount == 120
    assert launch.memory_limit is not None and launch.memory_limit.amount == 1024
    assert launch.orphans_children is not None and launch.orphans_children.source.line == 5


def test_systemd_infinity_is_unbounded(tmp_path: Path) -> None:
    write(tmp_path, {"w.service": "[Service]\nExecStart=tenure worker\nTimeoutStopSec=infinity\n"})
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.platform_grace is not None and launch.platform_grace.amount is None


def test_supervisord_env_expansion_and_defaults(tmp_path: Path) -> None:
    write(tmp_path, {"conf.d/app.ini": """\
[program:worker]
command=tenure worker --app a:app --grace %(ENV_GRACE)s
numprocs=2
"""})  # fmt: skip
    (launch,) = read_deployments(scan(str(tmp_path))).launches
    assert launch.platform_grace is not None
    assert str(launch.platform_grace.source) == "supervisord default"
    assert launch.orphans_children is not None
    assert launch.problems  # %(ENV_GRACE)s cannot be known here


def test_other_files_are_reported_not_read(tmp_path: Path) -> None:
    write(tmp_path, {
        ".github/workflows/ci.yml": "on: push\n",
        "openapi.yaml": "openapi: 3.0.0\n",
        "chart/templates/deploy.yaml": "apiVersion: v1\nkind: Pod\nspec: {{ .Values.spec }}\n",
        "nginx.conf": "server { listen 80; }\n",
        "tests/docker-compose.yml": "services: {w: {command: tenure worker --grace 99}}\n",
    })  # fmt: skip
    result = read_deployments(scan(str(tmp_path)))
    assert result.launches == []
    reasons = {s.path: s.reason for s in result.skipped}
    assert "not a Compose file" in reasons["openapi.yaml"]
    assert "template" in reasons["chart/templates/deploy.yaml"]
    skipped_dirs = {s.path for s in scan(str(tmp_path)).skipped}
    assert "tests" in skipped_dirs


# Cut from a GIS platform's install/supervisor_celery_setup/*-celeryd.conf: every key of the
# program indented alike under its header, as supervisord (configparser) reads them.
INDENTED_PROGRAM = """[program:celery]
    command=/venv/bin/celery -A app.celery worker  --loglevel=INFO
    directory=/srv/app

    ; Increase this if you have very long running tasks.
    stopwaitsecs = 600
    stopasgroup=true
"""
# The quiet twin: a command continued on a deeper-indented line is still one value.
CONTINUED_PROGRAM = """[program:celery]
command=/venv/bin/celery -A app.celery worker
    --loglevel=INFO
stopwaitsecs=600
"""


def test_supervisord_keys_indented_alike_are_keys_not_continuations() -> None:
    from tenure.doctor.readers.ini import read_ini

    entries = read_ini(INDENTED_PROGRAM, backslash_continues=False)
    assert [(e.key, e.value, e.line) for e in entries] == [
        ("command", "/venv/bin/celery -A app.celery worker  --loglevel=INFO", 2),
        ("directory", "/srv/app", 3),
        ("stopwaitsecs", "600", 6),
        ("stopasgroup", "true", 7),
    ]
    continued = read_ini(CONTINUED_PROGRAM, backslash_continues=False)
    assert [(e.key, e.value) for e in continued] == [
        ("command", "/venv/bin/celery -A app.celery worker --loglevel=INFO"),
        ("stopwaitsecs", "600"),
    ]
