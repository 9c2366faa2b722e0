"""Real worker processes for end-to-end tests: start, signal, wait on conditions."""

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
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servers import isolated_store_url

TEMPLATE = Path(__file__).with_name("jobs_template.py")
SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Ledger:
    path: Path

    def lines(self) -> list[tuple[str, int, int, str, float]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            job_id, attempt, pid, event, at = line.split()
            out.append((job_id, int(attempt), int(pid), event, float(at)))
        return out

    def events(self, job_id: str, event: str) -> list[tuple[str, int, int, str, float]]:
        return [x for x in self.lines() if x[0] == job_id and x[3] == event]


class Project:
    """A directory with a jobs module bound to one store URL and one ledger."""

    def __init__(self, directory: Path, store_url: str, template: Path | None = None) -> None:
        self.dir = directory
        self.module_name = f"e2e_jobs_{secrets.token_hex(4)}"
        self.ledger = Ledger(directory / "ledger.txt")
        # TEMPLATE read now, not bound as a default: tests monkeypatch it
        text = (template or TEMPLATE).read_text().replace("__STORE_URL__", store_url)
        text = text.replace("__LEDGER__", str(self.ledger.path))
        (directory / f"{self.module_name}.py").write_text(text)
        spec = importlib.util.spec_from_file_location(
            self.module_name, directory / f"{self.module_name}.py"
        )
        assert spec is not None and spec.loader is not None
        self.jobs: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.jobs)
        self.app = self.jobs.app
        self.workers: list[WorkerProcess] = []

    def worker(
        self, *args: str, host: str | None = None, cgroup: Path | None = None
    ) -> WorkerProcess:
        """A worker process; with `host`, in a UTS namespace of its own named `host` (a
        second "host": its own hostname, which its worker id and attempts record); with
        `cgroup` (its cgroup.procs file), started inside that cgroup, as in a container."""
        w = WorkerProcess(self, list(args), host=host, cgroup=cgroup)
        self.workers.append(w)
        return w

    def stop_all(self) -> None:
        for w in self.workers:
            w.kill()
        self.app.close()


@contextlib.contextmanager
def isolated_project(
    request: pytest.FixtureRequest,
    kind: str,
    tmp_path: Path,
    template: Path | None = None,
    *,
    migrate: bool = True,
) -> Iterator[Project]:
    """A Project on a store of its own of `kind` (sqlite, or postgres or redis on the session's
    server): its workers killed, then the store dropped, when the test ends, however it ends."""
    base = "" if kind == "sqlite" else request.getfixturevalue(f"{kind}_url")
    with isolated_store_url(kind, base, tmp_path) as url:
        project = Project(tmp_path, url, template)
        try:
            if migrate:
                project.app.store.migrate()
            yield project
        finally:
            project.stop_all()


class WorkerProcess:
    def __init__(
        self,
        project: Project,
        args: list[str],
        host: str | None = None,
        env_extra: dict[str, str] | None = None,
        cgroup: Path | None = None,
    ) -> None:
        env = {**os.environ, **(env_extra or {})}
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
        env["PYTHONUNBUFFERED"] = "1"
        self.log_path = project.dir / f"worker-{secrets.token_hex(3)}.log"
        self._log = self.log_path.open("wb")
        as_host = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host or ""]
        in_cgroup = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup)]
        self.proc = subprocess.Popen(
            [
                *(as_host if host else []),
                *(in_cgroup if cgroup else []),
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
            start_new_session=True,  # its own process group: the test can kill it whole
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def signal_group(self, signum: int) -> None:
        """Signal the supervisor's process group and each child's (a child leads a session of
        its own, so that a job's subprocesses die with its attempt)."""
        for group in [self.proc.pid, *children_of(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signum)

    def kill_group(self) -> None:
        """SIGKILL the supervisor and every child at once, like the OOM killer or a host loss."""
        self.signal_group(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def wait(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def children_of(pid: int) -> list[int]:
    """Child processes of `pid`, whichever of its threads forked them."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                out.extend(int(x) for x in (task / "children").read_text().split())
    return out


def wait_until(condition: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    """Poll until `condition()` is truthy; fail with `what` after a generous deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def state_is(app: Any, job_id: str, *states: str) -> Callable[[], bool]:
    return lambda: app.get_job(job_id).state in states
