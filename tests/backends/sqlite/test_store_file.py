"""The SQLite store's file as it is on disk: a dispatch into a file deleted or replaced since the
process opened it raises a clear error instead of returning the id of a job stored nowhere, and a
file that is not a database is named, not retried."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import tenure
from tenure.core.errors import StoreUnavailable


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def test_dispatch_into_a_deleted_file_raises_and_stores_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "tenure.db")
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    first = noop.dispatch()
    assert app.get_job(first.id).state == "queued"
    _remove(path)
    with pytest.raises(StoreUnavailable) as raised:
        noop.dispatch()
    assert f"the SQLite store file {path} was deleted or replaced" in str(raised.value)
    # the next call opens what is at the path then: a new file, which a worker can see
    again = noop.dispatch()
    app.close()
    fresh = tenure.App(f"sqlite:///{path}")
    assert fresh.get_job(again.id).state == "queued"
    assert fresh.counts().get("queued") == 1  # the refused dispatch left nothing anywhere
    fresh.close()


def test_dispatch_into_a_replaced_file_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "tenure.db")
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    noop.dispatch()
    other = tenure.App(f"sqlite:///{tmp_path / 'other.db'}")
    other.counts()  # creates and migrates the other file
    other.close()
    os.replace(tmp_path / "other.db", path)  # a restore, a wrong volume
    with pytest.raises(StoreUnavailable, match="deleted or replaced"):
        noop.dispatch()
    app.close()


def test_worker_on_a_corrupt_file_exits_2_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "tenure.db"
    path.write_bytes(b"not a database, a stray upload or a torn copy\n" * 200)
    (tmp_path / "corrupt_jobs.py").write_text(
        f"import tenure\napp = tenure.App('sqlite:///{path}')\n@app.job\ndef noop() -> None: ...\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tenure", "worker", "--app", "corrupt_jobs:app", "--burst"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,  # before the fix it retried "store unavailable" for ever
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert f"the SQLite store file {path} is not a database" in done.stderr
    assert path.read_bytes().startswith(b"not a database")  # nothing written over it


def test_a_directory_on_the_path_replaced_is_noticed(tmp_path: Path) -> None:
    # Between stats only the watch of the path's directories can tell (file_watch.py): the
    # file itself is untouched, its directory is moved away and another put in its place.
    (tmp_path / "data").mkdir()
    path = str(tmp_path / "data" / "tenure.db")
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    noop.dispatch()
    noop.dispatch()  # the second check already rides on the watch, where there is one
    os.rename(tmp_path / "data", tmp_path / "old")
    (tmp_path / "data").mkdir()
    other = tenure.App(f"sqlite:///{path}")
    other.counts()  # a new store at the same path
    other.close()
    with pytest.raises(StoreUnavailable, match="deleted or replaced"):
        noop.dispatch()
    app.close()


def test_the_watch_saves_the_stat_until_something_on_the_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenure.stores.sqlite import database, file_watch

    path = str(tmp_path / "tenure.db")
    if file_watch.watch(path) is None:
        pytest.skip("no inotify watch here (not Linux, or a file system not known local)")
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    noop.dispatch()
    stats: list[str] = []
    real = database._file_identity
    monkeypatch.setattr(database, "_file_identity", lambda p: stats.append(p) or real(p))
    for _ in range(3):
        noop.dispatch()
    assert stats == []  # nothing changed on the path: no stat
    # The quiet twin of the tests above: a neighbour (a file beside the store, one beside the
    # store's directory) changes nothing the path names: no stat, no refusal.
    (tmp_path / "notes.txt").write_text("a neighbour")
    (tmp_path.parent / f"{tmp_path.name}-neighbour").mkdir()
    noop.dispatch()
    assert stats == []
    # the store's own name, touched and put back as it was, costs one stat and no refusal
    os.rename(path, path + ".moved")
    os.rename(path + ".moved", path)
    noop.dispatch()
    assert stats == [path]
    assert app.counts().get("queued") == 6
    app.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    # The process id is read once and again after a fork (not per call): a child must still
    # see that the connection it inherited is its parent's, and write on one of its own.
    app = tenure.App(f"sqlite:///{tmp_path / 'tenure.db'}")

    @app.job
    def noop() -> None: ...

    noop.dispatch()
    db = app.store.db  # type: ignore[attr-defined]
    inherited = db.conn()
    pid = os.fork()
    if pid == 0:
        own = db.conn()
        noop.dispatch()
        os._exit(0 if own is not inherited and db.conn() is own else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert db.conn() is inherited  # the parent keeps its own
    app.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "tenure.db")) as conn:
        assert conn.execute("SELECT count(*) FROM tenure_jobs").fetchone() == (2,)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_reads_its_own_watch_not_its_parents(tmp_path: Path) -> None:
    # The two would share one inotify queue: a child draining it takes the parent's news of
    # a deletion, and the parent's next dispatch would go into the orphaned file.
    path = str(tmp_path / "tenure.db")
    app = tenure.App(f"sqlite:///{path}")

    @app.job
    def noop() -> None: ...

    noop.dispatch()
    db = app.store.db  # type: ignore[attr-defined]
    inherited = db._watched()
    pid = os.fork()
    if pid == 0:
        own = db._watched()
        os._exit(0 if own is not inherited and db._watched() is own else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert db._watched() is inherited  # the parent keeps its own
    _remove(path)
    with pytest.raises(StoreUnavailable, match="deleted or replaced"):
        noop.dispatch()
    app.close()
