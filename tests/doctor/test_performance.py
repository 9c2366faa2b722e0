"""Acceptance 3: a tree of 5,000 Python files and 500 YAML files, read whole and quietly.

Its time (goal: under 10 s) is measured by `python -m bench.doctor_speed`, not asserted here:
a loaded machine makes a slow figure, not a failed test.

The tree is shaped like a large monorepo: most modules are plain code, one in ten defines or
dispatches jobs (with HTTP calls), and the YAML is a mix of Compose, Kubernetes and CI files.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import run_in

PLAIN = '''\
"""Module {i}."""
from dataclasses import dataclass


@dataclass
class Record{i}:
    id: int
    name: str

    def render(self) -> str:
        return f"{{self.id}}: {{self.name}}"


def total(rows: list[Record{i}]) -> int:
    return sum(r.id for r in rows if r.name)
'''
JOBS = """\
import requests

from shop.app import app


def fetch(url: str) -> object:
    return requests.get(url, timeout=3)


@app.job(timeout=5, kill_after=1, queue="q{q}")
def job_{i}(lo: int, hi: int) -> None:
    for n in range(lo, hi + 1):
        fetch(f"https://api.example/{{n}}")


def start_{i}() -> None:
    job_{i}.dispatch(1, 50)
"""
COMPOSE = """\
services:
  worker{i}:
    image: shop
    stop_grace_period: 30s
    command: tenure worker --app shop.app:app --queues {queues} --grace 20
"""
K8S = """\
apiVersion: v1
kind: ConfigMap
metadata: {{name: c{i}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w{i}}}
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 40
      containers:
        - name: w
          args: [tenure, worker, --app, "shop.app:app", --grace, "20"]
"""
CI = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{{run: make {i}}}]\n"


def build(root: Path) -> None:
    queues = ",".join(f"q{q}" for q in range(10))
    for i in range(5000):
        package = root / "src" / f"pkg{i // 100}"
        package.mkdir(parents=True, exist_ok=True)
        text = JOBS.format(i=i, q=i % 10) if i % 10 == 0 else PLAIN.format(i=i)
        (package / f"mod{i}.py").write_text(text)
    for i in range(500):
        folder = root / "deploy" / f"env{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = i % 3
        text = (COMPOSE.format(i=i, queues=queues) if kind == 0
                else K8S.format(i=i) if kind == 1 else CI.format(i=i))  # fmt: skip
        (folder / f"f{i}.yaml").write_text(text)


def test_big_tree_is_read_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(tmp_path)
    started = time.perf_counter()
    report = run_in(tmp_path, None, monkeypatch)
    elapsed = time.perf_counter() - started
    print(f"\ndoctor on 5,000 .py + 500 .yaml: {elapsed:.2f} s")
    assert report.files_read == 5500
    assert len(report.jobs) == 500
    assert len(report.launches) == 334
    assert report.findings == [], report.findings[:3]
