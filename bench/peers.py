"""The peers' virtual environments, kept apart from tenure's: bench/.venv-peers (Celery, RQ,
Dramatiq, Huey, Procrastinate, py-spy, pyinstrument) and bench/.venv-peers-arq (arq pins
redis<6 while Celery's kombu needs redis>=6.4, so they cannot share one)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import venv
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = {
    "peers": (BENCH / ".venv-peers", BENCH / "requirements-peers.txt"),
    "peers-arq": (BENCH / ".venv-peers-arq", BENCH / "requirements-peers-arq.txt"),
}
STAMP = "bench-requirements.sha256"


def python(venv_name: str) -> str:
    if venv_name == "project":
        return sys.executable
    return str(VENVS[venv_name][0] / "bin" / "python")


def ensure(venv_name: str, log: list[str]) -> None:
    """Create or update a peers venv when its pinned requirements changed; else do nothing."""
    if venv_name == "project":
        return
    path, requirements = VENVS[venv_name]
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = path / STAMP
    if stamp.exists() and stamp.read_text() == digest:
        return
    log.append(f"installing {requirements.name} into {path.relative_to(ROOT)}")
    print(f"bench: {log[-1]}", file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True, clear=False).create(path)
    subprocess.run(
        [str(path / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(requirements)],
        check=True,
    )
    stamp.write_text(digest)


def versions(venv_name: str, packages: tuple[str, ...]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"
    )
    out = subprocess.run(
        [python(venv_name), "-c", code, *packages], capture_output=True, text=True, check=True
    )
    import json

    found: dict[str, str] = json.loads(out.stdout)
    return found
