"""A run directory with a jobs module bound to one store and one ledger, and real workers."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from tenure.core.records import Ending

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TEMPLATE = Path(__file__).with_name("jobs_template.py")
SKEW_DIR = Path(__file__).with_name("skew")

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
BACKENDS = ("sqlite", "postgres", "redis")


def with_query_param(url: str, key: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"


def base_url(backend: str) -> str:
    if backend == "postgres":
        return os.environ.get("TENURE_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    if backend == "redis":
        return os.environ.get("TENURE_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    return ""


def store_url(backend: str, directory: Path, server_url: str | None = None) -> str:
    """A store nobody else uses: a new SQLite file, PostgreSQL schema or Redis prefix."""
    tag = f"chaos_{os.getpid()}_{secrets.token_hex(4)}"
    if backend == "sqlite":
        return f"sqlite:///{directory / 'tenure.db'}"
    if backend == "postgres":
        return with_query_param(server_url or base_url(backend), "schema", tag)
    if backend == "redis":
        return with_query_param(server_url or base_url(backend), "prefix", tag)
    raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")


def drop_store(url: str) -> None:
    """Remove what a PostgreSQL schema or Redis prefix left behind (SQLite: a temp file)."""
    scheme = url.split(":", 1)[0]
    base, _, query = url.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
    with contextlib.suppress(Exception):
        if scheme.startswith("postgres") and "schema" in params:
            import psycopg

            with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{params["schema"]}" CASCADE')
        elif scheme.startswith("redis") and "prefix" in params:
            import redis

            client = redis.Redis.from_url(base)
            try:
                keys = list(client.scan_iter(match=f"{params['prefix']}*", count=1000))
                for i in range(0, len(keys), 500):
                    client.delete(*keys[i : i + 500])
            finally:
                client.close()


def store_works(url: str) -> str | None:
    """None when tenure.App(url) can dispatch, reserve and complete; else why not."""
    import tenure
    from tenure.core.records import WorkerRef

    app = tenure.App(url)
    try:

        @app.job(name="chaos_probe", timeout=5)
        def probe(n: int) -> None:
            return None

        handle = probe.dispatch(1)
        got = app.store.reserve(
            queues=["default"], worker=WorkerRef("probe", "probe", os.getpid()), lease=5
        )
        if [r.job_id for r in got] != [handle.id]:
            return f"reserve returned {got!r}"
        app.store.end_attempt(Ending(job_id=handle.id, token=got[0].token))
        state = app.get_job(handle.id).state
        return None if state == "succeeded" else f"state after complete: {state}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(Exception):
            app.close()


def wait_until(
    condition: Callable[[], Any], timeout: float = 60, what: str = "condition", poll: float = 0.05
) -> Any:
    """Poll until `condition()` is truthy; raise after `timeout` s saying what never happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(poll)


class Project:
    """A run directory: jobs module, ledger, dispatched-id record, fault log, workers."""

    def __init__(self, directory: Path, url: str) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.url = url
        self.module_name = f"chaos_jobs_{secrets.token_hex(4)}"
        self.ledger_path = directory / "ledger.txt"
        text = TEMPLATE.read_text().replace("__STORE_URL__", url)
        text = text.replace("__LEDGER__", str(self.ledger_path))
        module_path = directory / f"{self.module_name}.py"
        module_path.write_text(text)
        spec = importlib.util.spec_from_file_location(self.module_name, module_path)
        assert spec is not None and spec.loader is not None
        self.jobs: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.jobs)
        self.app = self.jobs.app
        self.workers: list[WorkerProcess] = []
        self.worker_env: dict[str, str] = {}  # set for every worker started from now on

    def worker(self, *args: str, skew: float = 0.0) -> WorkerProcess:
        w = WorkerProcess(self, list(args), skew=skew)
        self.workers.append(w)
        return w

    def live_workers(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.alive()]

    def stop_all(self) -> None:
        for w in self.workers:
            w.kill()
        with contextlib.suppress(Exception):
            self.app.close()

    def worker_logs(self) -> str:
        return "\n".join(f"--- {w.log_path.name}\n{w.log()}" for w in self.workers)


class WorkerProcess:
    def __init__(self, project: Project, args: list[str], *, skew: float = 0.0) -> None:
        env = dict(os.environ)
        paths = [str(SRC), env.get("PYTHONPATH", "")]
        if skew:
            paths.insert(0, str(SKEW_DIR))
            env["CHAOS_CLOCK_SKEW"] = repr(skew)
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env["PYTHONUNBUFFERED"] = "1"
        env["TENURE_LOG_FORMAT"] = "text"
        env.update(project.worker_env)
        self.args = args
        self.skew = skew
        self.terminated = False  # told to stop (SIGTERM) by the harness
        self.log_path = project.dir / f"worker-{len(project.workers):03d}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tenure",
                "worker",
                "--app",
                f"{project.module_name}:app",
                *args,
            ],
            cwd=project.dir,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a fault can hit it whole
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def children(self) -> list[int]:
        return children_of(self.proc.pid)

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signum)

    def signal_group(self, signum: int) -> None:
        """The supervisor's process group and each child's: a child leads a session of its
        own (so that a job's subprocesses die with its attempt), out of the worker's group."""
        for group in [self.proc.pid, *self.children()]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signum)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.signal_group(signal.SIGCONT)
            self.signal_group(signal.SIGKILL)
            self.proc.wait(timeout=30)
        else:
            # the supervisor is gone; make sure no orphaned child of its group lingers
            self.signal_group(signal.SIGKILL)
        if not self._log.closed:
            self._log.close()

    def wait(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout=timeout)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def children_of(pid: int) -> list[int]:
    """Child processes of `pid`, whichever of its threads forked them."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            out.extend(int(x) for x in (task / "children").read_text().split())
    return out


@contextlib.contextmanager
def project(directory: Path, url: str) -> Iterator[Project]:
    p = Project(directory, url)
    try:
        yield p
    finally:
        p.stop_all()


def skip_or_fail(reason: str) -> None:
    """A backend that cannot run is a loud skip on a laptop and a failure under CI=true."""
    import pytest

    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: a skipped backend is a failure: {reason}")
    pytest.skip(reason)
