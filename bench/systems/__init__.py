"""The systems under test. Each `*_sys` module defines the same two jobs (`noop`, `sleep`) in
its library's own terms plus an `Adapter` that enqueues them and names the worker command.

This package module is standard library only: the harness imports it from tenure's venv, and
each system's module is imported only inside that system's own venv.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

SLEEP_S = 0.01  # the I/O-bound workload: each job sleeps 10 ms
SLEEP_CONCURRENCY = 16

# Layouts of the worker side, the same three for every system:
#   one   - one worker process with the system's default in-process concurrency
#   two   - two job-executing processes (this machine has 2 cores), the system's own way
#   sleep - 16 jobs at once, with the executor the system documents for I/O-bound work
LAYOUTS = ("one", "two", "sleep")


@dataclass(frozen=True)
class System:
    key: str
    label: str
    module: str
    venv: str  # "project" (tenure's .venv), "peers" or "peers-arq"
    engines: tuple[str, ...]
    packages: tuple[str, ...]  # whose versions the report lists
    layouts: tuple[str, ...] = LAYOUTS


SYSTEMS = (
    System(
        "tenure",
        "tenure",
        "bench.systems.tenure_sys",
        "project",
        ("sqlite", "postgres", "redis", "redis-cluster", "pgbouncer"),
        ("tenure", "psycopg", "redis"),
    ),
    System(
        "tenure-async",
        "tenure (async jobs)",
        "bench.systems.tenure_async_sys",
        "project",
        ("sqlite", "postgres", "redis"),
        ("tenure",),
        ("sleep",),  # a variant for the I/O-bound workload only
    ),
    System("huey", "Huey", "bench.systems.huey_sys", "peers", ("sqlite", "redis"), ("huey",)),
    System("rq", "RQ", "bench.systems.rq_sys", "peers", ("redis",), ("rq", "redis")),
    System(
        "dramatiq", "Dramatiq", "bench.systems.dramatiq_sys", "peers", ("redis",), ("dramatiq",)
    ),
    System("arq", "arq", "bench.systems.arq_sys", "peers-arq", ("redis",), ("arq", "redis")),
    System(
        "celery", "Celery", "bench.systems.celery_sys", "peers", ("redis",), ("celery", "kombu")
    ),
    System(
        "procrastinate",
        "Procrastinate",
        "bench.systems.procrastinate_sys",
        "peers",
        ("postgres",),
        ("procrastinate", "psycopg"),
    ),
)

BY_KEY = {s.key: s for s in SYSTEMS}


class Adapter:
    """What the harness needs from a system. Subclasses live in the `*_sys` modules."""

    has_bulk = False
    # The settings used, in words, for the report: documented defaults unless said otherwise.
    settings = ""

    def __init__(self, engine: str, url: str) -> None:
        self.engine = engine
        self.url = url

    def prepare(self) -> None:
        """Create the schema or whatever the system needs before its workers start."""

    def enqueue(self, kind: str, n: int) -> None:
        raise NotImplementedError

    def enqueue_loop(self, kind: str, numbers: range, deadline: float) -> int:
        """Enqueue one by one until done or `deadline` (monotonic); return how many."""
        import time

        done = 0
        for n in numbers:
            self.enqueue(kind, n)
            done += 1
            if done % 64 == 0 and time.monotonic() >= deadline:
                break
        return done

    def enqueue_bulk(self, kind: str, numbers: list[int]) -> None:
        raise NotImplementedError

    def worker_commands(self, layout: str) -> list[list[str]]:
        raise NotImplementedError

    def worker_env(self, layout: str) -> dict[str, str]:
        return {}

    def processes(self, layout: str) -> int:
        """How many distinct processes execute jobs in this layout (warm-up waits for all)."""
        raise NotImplementedError

    def explain_reserve(self) -> str | None:
        """EXPLAIN of the system's own reserve path as its workers will plan it (PostgreSQL),
        where the adapter knows it; None where it does not."""
        return None

    def close(self) -> None:
        pass


def tool(name: str) -> str:
    """A console script of the running venv (its bin directory, next to the interpreter)."""
    return str(Path(sys.executable).parent / name)


def url() -> str:
    return os.environ["BENCH_URL"]


def engine() -> str:
    return os.environ["BENCH_ENGINE"]
