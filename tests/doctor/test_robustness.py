"""Acceptance 4: malformed YAML, binary files, symlink loops, unreadable files and non-UTF-8
text are reported as skipped, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_in, write

WORKER = "services:\n  w:\n    command: tenure worker --app a:app\n"


def skipped(report: object) -> dict[str, str]:
    return {s.path: s.reason for s in report.skipped}  # type: ignore[attr-defined]


def test_hostile_tree_is_skipped_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {
        "docker-compose.yml": WORKER,
        "broken/compose.yaml": "services:\n  w: [unclosed\n    command: {\n",
        "k8s/tabs.yaml": "apiVersion: v1\nkind: Pod\n\tspec: {}\n",
        "latin1/worker.service": "",
        "jobs_bad.py": "def f(:\n    app.job\n",
    })  # fmt: skip
    (tmp_path / "image.yaml").write_bytes(b"apiVersion\x00\x01\x02PNG")
    (tmp_path / "latin1" / "worker.service").write_bytes(
        "[Service]\nExecStart=tenure worker # café\n".encode("latin-1")
    )
    (tmp_path / "legacy_jobs.py").write_bytes('name = "caf\xe9"\napp.job\n'.encode("latin-1"))
    os.symlink(tmp_path, tmp_path / "loop")  # a directory link to its own parent
    os.symlink(tmp_path / "b.yaml", tmp_path / "a.yaml")  # file links in a circle
    os.symlink(tmp_path / "a.yaml", tmp_path / "b.yaml")
    os.symlink(tmp_path / "gone.yaml", tmp_path / "dangling.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")  # opening it would block forever

    report = run_in(tmp_path, None, monkeypatch)

    reasons = skipped(report)
    assert "malformed YAML" in reasons[os.path.join("broken", "compose.yaml")]
    assert "malformed YAML" in reasons[os.path.join("k8s", "tabs.yaml")]
    assert reasons["image.yaml"] == "binary file"
    assert "not UTF-8" in reasons[os.path.join("latin1", "worker.service")]
    assert "syntax error" in reasons["jobs_bad.py"]
    assert "legacy_jobs.py" in reasons
    assert "not followed" in reasons["loop"]
    assert "cannot read" in reasons["a.yaml"] and "cannot read" in reasons["b.yaml"]
    assert "cannot read" in reasons["dangling.yaml"]
    assert reasons["pipe.yaml"] == "not a regular file"
    assert [w.name for w in report.launches] == ["w"]  # the good file was still read


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"secret/compose.yaml": WORKER, "locked.yaml": WORKER})
    (tmp_path / "locked.yaml").chmod(0)
    (tmp_path / "secret").chmod(0)
    try:
        reasons = skipped(run_in(tmp_path, None, monkeypatch))
    finally:
        (tmp_path / "secret").chmod(0o755)
        (tmp_path / "locked.yaml").chmod(0o644)
    assert "cannot read" in reasons["locked.yaml"]
    assert "cannot list" in reasons["secret"]


def test_unreadable_file_as_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads any mode; /proc/self/mem is a file whose read() fails even for root."""
    write(tmp_path, {"docker-compose.yml": WORKER})
    os.symlink("/proc/self/mem", tmp_path / "mem.yaml")  # a file no one can read() this way
    reasons = skipped(run_in(tmp_path, None, monkeypatch))
    assert "mem.yaml" in reasons


def test_huge_alias_bomb_is_cheap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 30):
        lines.append(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]")
    lines.append("services: {w: {command: tenure worker, x: *a29}}")
    write(tmp_path, {"compose.yaml": "\n".join(lines) + "\n"})
    report = run_in(tmp_path, None, monkeypatch)
    assert [w.name for w in report.launches] == ["w"]


def test_missing_path_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tenure.doctor import CannotRun, diagnose

    monkeypatch.chdir(tmp_path)
    with pytest.raises(CannotRun, match="does not exist"):
        diagnose(None, "nowhere")
