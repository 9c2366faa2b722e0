"""One job's walk: which tenure modules a no-op job passes through, per process, from its
dispatch to its recorded success.

    .venv/bin/python -m bench walk [--engine sqlite|postgres|redis|all] [--url URL]
                                   [--concurrency N]

`--engine` walks on a fresh store of that engine (a new SQLite file, PostgreSQL schema or Redis
key prefix, dropped afterwards); `all` walks on each in turn. `--url` names a store instead.

Every process (this dispatcher, the worker's supervisor, its child) runs with a profile hook
(`sys.setprofile` and `threading.setprofile`, installed by a sitecustomize on PYTHONPATH) that
writes a line for every call into a tenure module; consecutive calls within one module of one
thread count as one stay. A warm-up job runs first, so imports and start-up are not counted;
the walk is the window from just before the measured job's dispatch to its attempt's recorded
end.

It prints, per process: the modules in the order first entered, the number of distinct modules,
the module changes ("file changes"), and the back-and-forths (A -> B -> A -> B runs), with the
goals of issue 17 beside the totals.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("sqlite", "postgres", "redis")
GOAL_PER_PROCESS = 10
GOAL_TOTAL = 16

# Installed in every process of the run through PYTHONPATH. It writes "time thread module" on
# each change of tenure module per thread, to one file per process.
SITECUSTOMIZE = textwrap.dedent(
    """
    import os, sys, threading, time

    _dir = os.environ.get("TENURE_WALK_DIR")
    if _dir:
        _out = open(os.path.join(_dir, f"trace-{os.getpid()}.txt"), "w", buffering=1)
        _cmd = open("/proc/self/cmdline", "rb").read().replace(b"\\n", b" ").replace(b"\\0", b" ")
        _out.write(_cmd.decode(errors="replace") + "\\n")

        def _hook(frame, event, arg):
            if event != "call":
                return
            name = frame.f_globals.get("__name__", "")
            if name == "__main__":  # `python -m tenure.worker.child` runs as __main__
                spec = frame.f_globals.get("__spec__")
                name = spec.name if spec is not None else name
            if not name.startswith("tenure"):
                return
            _out.write(f"{time.time():.6f} {threading.get_ident()} {name}\\n")

        sys.setprofile(_hook)
        threading.setprofile(_hook)
    """
)

JOBS = textwrap.dedent(
    """
    import tenure

    app = tenure.App()

    @app.job
    def noop() -> None:
        pass
    """
)


@dataclass
class Process:
    command: str
    events: list[tuple[float, int, str]] = field(default_factory=list)

    @property
    def role(self) -> str:
        if "tenure.worker.child" in self.command:
            return "child"
        if self.command.rstrip().endswith("bench.walk"):
            return "dispatcher"
        return "supervisor" if " worker " in f" {self.command} " else self.command[:40]


@dataclass
class Walk:
    role: str
    modules: list[str]  # in the order first entered
    changes: int  # module changes summed over threads
    back_and_forths: list[tuple[str, str]]  # each A -> B -> A -> B run, as (A, B)


def read_trace(path: Path) -> Process:
    lines = path.read_text().splitlines()
    process = Process(command=lines[0] if lines else "?")
    for line in lines[1:]:
        at, thread, module = line.split(" ", 2)
        process.events.append((float(at), int(thread), module))
    return process


def walk_of(process: Process, start: float, end: float) -> Walk:
    per_thread: dict[int, list[str]] = defaultdict(list)
    ordered: list[str] = []
    for at, thread, module in process.events:
        if start <= at <= end:
            seq = per_thread[thread]
            if not seq or seq[-1] != module:
                seq.append(module)
            if module not in ordered:
                ordered.append(module)
    changes = sum(max(len(seq) - 1, 0) for seq in per_thread.values())
    pingpong = [pair for seq in per_thread.values() for pair in ping_pongs(seq)]
    return Walk(process.role, ordered, changes, pingpong)


def ping_pongs(seq: list[str]) -> list[tuple[str, str]]:
    """Runs of A, B, A, B in a thread's module sequence (each run counted once)."""
    found, i = [], 0
    while i + 3 < len(seq):
        if seq[i] == seq[i + 2] and seq[i + 1] == seq[i + 3] and seq[i] != seq[i + 1]:
            found.append((seq[i], seq[i + 1]))
            i += 3
        else:
            i += 1
    return found


def fresh_url(engine: str, work: Path) -> str:
    """A store of `engine` no one else uses: a new file, schema or key prefix."""
    from bench.engines import POSTGRES_URL, REDIS_URL

    tag = f"tenure_walk_{secrets.token_hex(4)}"
    if engine == "postgres":
        return f"{POSTGRES_URL}?schema={tag}"
    if engine == "redis":
        return f"{REDIS_URL}?prefix={tag}"
    return f"sqlite:///{work / (tag + '.db')}"


def drop(url: str) -> None:
    """Remove what `fresh_url` made on a server (a SQLite file goes with its directory)."""
    from bench.priorities import drop as drop_store

    drop_store(url)


def run(url: str | None, concurrency: int, engine: str = "sqlite") -> list[Walk]:
    work = Path(tempfile.mkdtemp(prefix="tenure-walk-"))
    (work / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (work / "walkjobs.py").write_text(JOBS)
    store_url = url or fresh_url(engine, work)
    try:
        return _run(work, store_url, concurrency)
    finally:
        if url is None and engine != "sqlite":
            drop(store_url)


def _run(work: Path, store_url: str, concurrency: int) -> list[Walk]:
    env = {
        **os.environ,
        "TENURE_URL": store_url,
        "TENURE_WALK_DIR": str(work),
        "PYTHONPATH": os.pathsep.join([str(work), str(ROOT / "src"), str(ROOT)]),
    }
    # The dispatcher is a process of its own too, started with the hook from its first line.
    script = textwrap.dedent(
        f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(work)!r})
        import walkjobs
        app = walkjobs.app
        worker = subprocess.Popen([sys.executable, "-m", "tenure", "worker",
                                   "--app", "walkjobs:app", "--concurrency", "{concurrency}"],
                                  cwd={str(work)!r}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        def finished(job_id):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                info = app.get_job(job_id)
                if info.state == "succeeded":
                    return info
                time.sleep(0.01)
            raise SystemExit(f"job {{job_id}} did not succeed: {{app.get_job(job_id).state}}")
        finished(walkjobs.noop.dispatch().id)  # warm-up: imports, child start, first claim
        time.sleep(0.5)
        start = time.time()
        handle = walkjobs.noop.dispatch()
        dispatched = time.time()
        info = finished(handle.id)
        # SQLite's clock ('now') counts whole milliseconds: the recorded end may read up to
        # 1 ms before the moment it was written
        end = info.attempts[-1].ended_at + 0.001
        worker.terminate()
        worker.wait(30)
        print(start, dispatched, end)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "bench.walk"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the walk failed:\n{proc.stdout}\n{proc.stderr}")
    start, dispatched, end = map(float, proc.stdout.split()[-3:])
    walks = []
    for path in sorted(work.glob("trace-*.txt")):
        process = read_trace(path)
        if process.role == "dispatcher":
            walks.append(walk_of(process, start, dispatched))
        elif process.role in ("supervisor", "child"):
            walks.append(walk_of(process, start, end))
    return [w for w in walks if w.modules]


def short(module: str) -> str:
    return module.removeprefix("tenure.")


def report(walks: list[Walk], engine: str = "") -> str:
    on = f" on {engine}" if engine else ""
    lines = [f"One no-op job{on}, dispatch to recorded success (python -m bench walk):", ""]
    every: list[str] = []
    for w in walks:
        flag = "ok" if len(w.modules) <= GOAL_PER_PROCESS else f"over {GOAL_PER_PROCESS}"
        lines.append(
            f"{w.role}: {len(w.modules)} modules ({flag}), {w.changes} module changes, "
            f"{len(w.back_and_forths)} back-and-forths"
        )
        lines.append("  " + " -> ".join(short(m) for m in w.modules))
        for a, b in w.back_and_forths:
            lines.append(f"  back and forth: {short(a)} <-> {short(b)}")
        every += [m for m in w.modules if m not in every]
    total_flag = "ok" if len(every) <= GOAL_TOTAL else f"over {GOAL_TOTAL}"
    lines += [
        "",
        f"all processes: {len(every)} distinct modules ({total_flag}), "
        f"{sum(w.changes for w in walks)} module changes, "
        f"{sum(len(w.back_and_forths) for w in walks)} back-and-forths "
        f"(goal: <= {GOAL_PER_PROCESS} per process, <= {GOAL_TOTAL} in all, none back and forth)",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench walk", description=__doc__)
    parser.add_argument("--engine", choices=(*ENGINES, "all"), default="sqlite")
    parser.add_argument("--url", help="store URL (default: a fresh store of --engine)")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args(argv)
    engines = [""] if args.url else list(ENGINES) if args.engine == "all" else [args.engine]
    for i, engine in enumerate(engines):
        started = time.monotonic()
        walks = run(args.url, args.concurrency, engine or "sqlite")
        print(("\n" if i else "") + report(walks, engine))
        print(f"\n({time.monotonic() - started:.1f} s)")
    return 0
