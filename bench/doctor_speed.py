"""How long `tenure doctor` takes on big trees, as the doctor's performance tests build them:
5,000 Python files (500 of them defining jobs) with 500 YAML deployment files, and a Laravel
tree of 2,990 PHP files (300 jobs) with 200 more in vendor/. The goal for each: under 10 s.
The tests check what the doctor finds in these trees; the time is measured here, where a loaded
machine makes a slow figure, not a failed test.

    .venv/bin/python -m bench.doctor_speed [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "doctor"
TREES = {
    "5,000 .py + 500 .yaml": TESTS / "test_performance.py",
    "2,990 .php (+200 in vendor/)": TESTS / "laravel" / "test_laravel_performance.py",
}


def build_tree(test_file: Path, root: Path) -> None:
    """Build the tree the way the test builds it (its module's `build`)."""
    spec = importlib.util.spec_from_file_location(f"doctor_tree_{test_file.stem}", test_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(TESTS))
    spec.loader.exec_module(module)
    module.build(root)


def time_doctor(tree: Path, rounds: int) -> list[float]:
    command = [sys.executable, "-m", "tenure", "doctor", str(tree), "--format", "json"]
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(
            [*command, "--no-history"],
            capture_output=True,
            text=True,
            cwd=tree,
        )
        times.append(time.perf_counter() - started)
        if done.returncode == 2:
            raise SystemExit(f"doctor could not run: {done.stderr[-500:]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for label, test_file in TREES.items():
        with tempfile.TemporaryDirectory(prefix="tenure-doctor-bench-") as tmp:
            build_tree(test_file, Path(tmp))
            times = time_doctor(Path(tmp), args.rounds)
        print(
            f"tenure doctor on {label}, {args.rounds} runs (whole command, goal < 10 s): "
            f"median {statistics.median(times):.2f} s, min {min(times):.2f} s, "
            f"max {max(times):.2f} s"
        )


if __name__ == "__main__":
    main()
