"""python -m chaos run|report|fuzz|list

python -m chaos run --backend sqlite --profile full            # every scenario, acceptance sizes
python -m chaos run --backend redis --scenario kill-workers --set jobs=10000
python -m chaos report                                         # chaos/results/*.json -> REPORT.md
python -m chaos aof-window --trials 10                         # Redis AOF everysec, SIGKILLed
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from chaos.harness import BACKENDS

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_run(args: argparse.Namespace) -> int:
    from chaos import kills, topologies  # noqa: F401  (register their scenarios)
    from chaos.scenarios import PROFILES, SCENARIOS, Unavailable, run_one

    profile = PROFILES[args.profile]
    names = args.scenario or list(profile)
    overrides = dict(kv.split("=", 1) for kv in args.set)
    RESULTS.mkdir(exist_ok=True)
    failures = 0
    for backend in args.backend or list(BACKENDS):
        for name in names:
            if name not in SCENARIOS:
                print(f"unknown scenario {name!r}; see `python -m chaos list`", file=sys.stderr)
                return 2
            params = {**profile.get(name, {}), **{k: _value(v) for k, v in overrides.items()}}
            started = time.monotonic()
            keep = Path(args.keep) if args.keep else None
            try:
                result = run_one(name, backend, params, seed=args.seed, keep=keep)
            except Unavailable as exc:
                row: dict[str, Any] = {
                    "scenario": name,
                    "backend": backend,
                    "params": params,
                    "unavailable": str(exc),
                }
                print(f"{backend:8} {name:20} unavailable: {exc}")
            else:
                row = result.row()
                failures += 0 if row["ok"] else 1
                print(
                    f"{backend:8} {name:20} jobs={row['jobs']} faults={row['faults']} "
                    f"lost={row['lost']} unexplained={row['unexplained_duplicates']} "
                    f"unmatched={row['unmatched']} effects_twice={row['effects_twice']} "
                    f"reruns={row['explained_reruns']} fenced={row['fenced']} "
                    f"recovery p50={_fmt(row['recovery_p50_s'])} p99={_fmt(row['recovery_p99_s'])} "
                    f"rerun p50={_fmt(row['rerun_p50_s'])} "
                    f"wall={time.monotonic() - started:.0f}s {'OK' if row['ok'] else 'FAIL'}",
                    flush=True,
                )
                for problem in row["problems"]:
                    print(f"    PROBLEM: {problem}")
                for note in row["notes"]:
                    print(f"    note: {note}")
                for kind, samples in row["examples"].items():
                    for s in samples:
                        print(f"    {kind}: {s}")
            row["profile"] = args.profile
            row["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
            (RESULTS / f"{backend}-{name}.json").write_text(json.dumps(row, indent=1) + "\n")
    if args.report:
        from chaos.report import write_report

        write_report(RESULTS, HERE / "REPORT.md")
    return 1 if failures else 0


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}s"


def cmd_report(args: argparse.Namespace) -> int:
    from chaos.report import write_report

    path = write_report(RESULTS, HERE / "REPORT.md")
    print(path.read_text())
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from chaos import kills, topologies  # noqa: F401  (register their scenarios)
    from chaos.scenarios import SCENARIOS

    for name, fn in SCENARIOS.items():
        print(f"{name:20} {(fn.__doc__ or '').strip().splitlines()[0]}")
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from chaos.fuzz import run_all

    return run_all(examples=args.examples, backends=args.backend or list(BACKENDS))


def cmd_aof_window(args: argparse.Namespace) -> int:
    from chaos.aof_window import measure

    RESULTS.mkdir(exist_ok=True)
    row = measure(trials=args.trials, seed=args.seed)
    row["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (RESULTS / "redis-aof-window.json").write_text(json.dumps(row, indent=1) + "\n")
    print({k: v for k, v in row.items() if k != "trials_detail"})
    return 0


def _exit_on(signum: int, _frame: object) -> None:
    # Python's default for SIGTERM/SIGHUP ends the process without unwinding, so the runs'
    # `finally` blocks that kill their workers (harness.project) would never run and the
    # workers, each in a session of its own, would outlive the run.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on)
    parser = argparse.ArgumentParser(
        prog="python -m chaos",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios and record their results")
    run.add_argument("--backend", action="append", choices=BACKENDS)
    run.add_argument("--scenario", action="append")
    run.add_argument("--profile", choices=("ci", "full"), default="ci")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--keep", metavar="DIR", help="keep each run's directory under DIR")
    run.add_argument("--no-report", dest="report", action="store_false")
    run.set_defaults(fn=cmd_run)
    sub.add_parser("report", help="write chaos/REPORT.md from chaos/results").set_defaults(
        fn=cmd_report
    )
    sub.add_parser("list", help="the scenarios").set_defaults(fn=cmd_list)
    fuzz = sub.add_parser("fuzz", help="bad input: Hypothesis fuzz and corrupted rows")
    fuzz.add_argument("--backend", action="append", choices=BACKENDS)
    fuzz.add_argument("--examples", type=int, default=300)
    fuzz.set_defaults(fn=cmd_fuzz)
    aof = sub.add_parser("aof-window", help="Redis AOF everysec: writes lost to a SIGKILL")
    aof.add_argument("--trials", type=int, default=10)
    aof.add_argument("--seed", type=int, default=0)
    aof.set_defaults(fn=cmd_aof_window)
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
