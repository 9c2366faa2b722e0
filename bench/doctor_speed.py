"""How long `tenure doctor` takes on a big tree: 5,000 Python files (500 of them defining jobs)
and 500 YAML deployment files, as the doctor's performance test builds it.

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


def build_tree(root: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "doctor_performance", ROOT / "tests" / "doctor" / "test_performance.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "tests" / "doctor"))
    spec.loader.exec_module(module)
    module.build(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory(prefix="tenure-doctor-bench-") as tmp:
        build_tree(Path(tmp))
        for _ in range(args.rounds):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "tenure", "doctor", tmp, "--format", "json", "--no-history"],
                capture_output=True,
                text=True,
                cwd=tmp,
            )
            times.append(time.perf_counter() - started)
            if done.returncode == 2:
                raise SystemExit(f"doctor could not run: {done.stderr[-500:]}")
    print(
        f"tenure doctor on 5,000 .py + 500 .yaml files, {args.rounds} runs (whole command): "
        f"median {statistics.median(times):.2f} s, min {min(times):.2f} s, "
        f"max {max(times):.2f} s"
    )


if __name__ == "__main__":
    main()
