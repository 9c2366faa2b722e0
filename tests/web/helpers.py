"""A dashboard test project: a jobs module on a fresh SQLite store, real worker processes (from
tests/e2e) and a real `tenure dashboard` process."""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

from e2e.helpers import SRC, WorkerProcess, wait_until

TEMPLATE = Path(__file__).with_name("jobs_web.py")
LAUNCH = Path(__file__).with_name("launch.py")


class WebProject:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.url = f"sqlite:///{directory / 'tenure.db'}"
        self.module_name = f"web_jobs_{secrets.token_hex(4)}"
        path = directory / f"{self.module_name}.py"
        path.write_text(TEMPLATE.read_text().replace("__STORE_URL__", self.url))
        spec = importlib.util.spec_from_file_location(self.module_name, path)
        assert spec is not None and spec.loader is not None
        self.jobs: ModuleType = importlib.util.module_from_spec(spec)
        sys.modules[self.module_name] = self.jobs  # so --app MODULE:ATTR imports this one
        spec.loader.exec_module(self.jobs)
        self.app: Any = self.jobs.app
        self.workers: list[WorkerProcess] = []
        self.servers: list[DashboardProcess] = []

    @property
    def spec(self) -> str:
        return f"{self.module_name}:app"

    def worker(self, *args: str) -> WorkerProcess:
        # the project has an encrypted=True job: a worker without a key refuses to start
        key = base64.urlsafe_b64encode(b"k" * 32).decode()
        w = WorkerProcess(self, list(args), env_extra={"TENURE_ENCRYPTION_KEY": key})  # type: ignore[arg-type]
        self.workers.append(w)
        return w

    def dashboard(self, *args: str, env: dict[str, str] | None = None) -> DashboardProcess:
        d = DashboardProcess(self, list(args), env or {})
        self.servers.append(d)
        return d

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        for d in self.servers:
            d.kill()
        self.app.close()
        sys.modules.pop(self.module_name, None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def command_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("TENURE_DASHBOARD_TOKEN", None)
    env.update(extra or {})
    return env


class DashboardProcess:
    """`tenure dashboard` as a real process (through tests/web/launch.py until the command is
    wired into the main CLI)."""

    def __init__(self, project: WebProject, args: list[str], env: dict[str, str]) -> None:
        self.port = free_port()
        if not any(a == "--port" for a in args):
            args = [*args, "--port", str(self.port)]
        else:
            self.port = int(args[args.index("--port") + 1])
        self.log_path = project.dir / f"dashboard-{secrets.token_hex(3)}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(LAUNCH), "dashboard", "--app", project.spec, *args],
            cwd=project.dir,
            env=command_env(env),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 30) -> None:
        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"dashboard exited {self.proc.returncode}: {self.log()}")
            return status(self.base + "/static/dashboard.css") == 200

        wait_until(up, timeout=timeout, what=f"the dashboard on port {self.port}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def status(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status of a GET, without following redirects; 0 when nothing answers."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=5) as r:
            code: int = r.status
            return code
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code
    except OSError:
        return 0
