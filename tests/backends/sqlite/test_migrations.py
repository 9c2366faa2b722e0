"""SQLite's numbered migrations: a file written by schema version 1 upgrades in place, with
its jobs, attempts and batches intact, and two processes migrating at once take turns."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tenure.core.errors import ConfigError
from tenure.core.guards import Guards
from tenure.core.records import Ending, NewJob, WorkerRef
from tenure.core.retry import Policy
from tenure.stores.base import get_batch, get_job
from tenure.stores.sql.migrations import load_migrations
from tenure.stores.sqlite import SQLiteStore, schema

FIXTURE = Path(__file__).parent / "fixtures" / "schema_v1.db"
ME = WorkerRef(id="w-test", host="test-host", pid=1)
TABLES = (
    "tenure_jobs",
    "tenure_attempts",
    "tenure_batches",
    "tenure_once",
    "tenure_unique",
    "tenure_workers",
)
# Not idempotent on purpose: applied twice, ADD COLUMN fails ("duplicate column name").
EXTRA = (
    "ALTER TABLE tenure_jobs ADD COLUMN note TEXT;\n"
    "UPDATE tenure_jobs SET note = 'set by 0002; kept' WHERE test_hold() = 1;\n"
)


def copy_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copyfile(FIXTURE, path)
    return path


def row_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def migrations_with_extra(tmp_path: Path) -> Path:
    """The shipped migrations plus a 0002 of the test's own, as a later release would add."""
    folder = tmp_path / "migrations"
    folder.mkdir()
    for migration in schema.MIGRATIONS:
        (folder / f"{migration.version:04d}_{migration.name}.sql").write_text(migration.sql)
    (folder / f"{schema.SCHEMA_VERSION + 1:04d}_note.sql").write_text(EXTRA)
    return folder


def test_the_fixture_was_written_by_schema_version_1() -> None:
    with sqlite3.connect(FIXTURE) as conn:
        assert schema.schema_version(conn) == 1
        assert dict(row_counts(FIXTURE)) == {
            "tenure_jobs": 8,
            "tenure_attempts": 4,
            "tenure_batches": 1,
            "tenure_once": 1,
            "tenure_unique": 1,
            "tenure_workers": 1,
        }


def test_a_version_1_file_opens_with_its_jobs_attempts_and_batches_intact(
    tmp_path: Path,
) -> None:
    path = copy_fixture(tmp_path)
    store = SQLiteStore(f"sqlite:///{path}")
    try:
        store.migrate()
        with sqlite3.connect(path) as conn:  # brought forward in place, from version 1
            assert schema.schema_version(conn) == schema.SCHEMA_VERSION > 1
        failed = get_job(store, "j-failed")
        assert failed is not None and failed.state == "failed" and failed.tries_used == 2
        assert [(a.number, a.outcome, a.error) for a in failed.attempts] == [
            (1, "failed", "boom"),
            (2, "failed", "boom"),
        ]
        succeeded = get_job(store, "j-succeeded")
        assert succeeded is not None and succeeded.state == "succeeded"
        assert [e.key for e in succeeded.effects] == ["charge"]
        running = get_job(store, "j-running")
        assert running is not None and running.attempts[0].worker_id == "w-fixture"
        scheduled = get_job(store, "j-scheduled")
        assert scheduled is not None and scheduled.run_at > scheduled.created_at + 3000
        batch = get_batch(store, "b-1")
        assert batch is not None
        assert (batch.name, batch.state, batch.total, batch.jobs) == (
            "fixture batch",
            "running",
            3,
            2,
        )
        assert [w.id for w in store.list_workers()] == ["w-fixture"]
        # The unique key the old file holds still holds.
        again = NewJob(
            id="j-unique-2",
            name="fixture.job",
            queue="default",
            payload="{}",
            policy=Policy(),
            guards=Guards(unique_key="u-1"),
        )
        assert store.enqueue_many([again]) == ["j-unique"]
        # And its life goes on: the two members end, the batch counts them and enqueues the
        # `then` callback the fixture wrote down. j-scheduled joins them once the hour it was
        # delayed by (from the fixture's making) has passed.
        ended: list[str] = []
        while got := store.reserve(queues=["default"], worker=ME, lease=30, limit=10):
            for r in got:
                assert store.end_attempt(Ending(job_id=r.job_id, token=r.token))[0].accepted
                ended.append(r.job_id)
        expected = {"j-queued", "j-unique", "b-m1", "b-m2", "b-then"}
        assert expected <= set(ended) <= expected | {"j-scheduled"}
        assert len(ended) == len(set(ended))
        batch = get_batch(store, "b-1")
        assert batch is not None and (batch.state, batch.done) == ("succeeded", 2)
        assert batch.then_job_id == "b-then"
    finally:
        store.close()


def test_pending_migrations_upgrade_a_version_1_file_in_place(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    before = row_counts(path)
    migrations = load_migrations(migrations_with_extra(tmp_path), store="test")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("test_hold", 0, lambda: 1)
    schema.migrate(conn, migrations)
    assert schema.schema_version(conn) == schema.SCHEMA_VERSION + 1
    notes = {r[0] for r in conn.execute("SELECT note FROM tenure_jobs")}
    conn.close()
    assert notes == {"set by 0002; kept"}
    assert row_counts(path) == before
    store = SQLiteStore(f"sqlite:///{path}")
    try:
        job = get_job(store, "j-failed")
        assert job is not None and len(job.attempts) == 2
    finally:
        store.close()


MIGRATOR = """
import sqlite3, sys, time
from pathlib import Path
from tenure.stores.sql.migrations import load_migrations
from tenure.stores.sqlite import schema

path, folder, mode, held, release = sys.argv[1:]

def hold():
    # Process A stops inside the migration, lock held, until the test lets it go.
    if mode == "first":
        Path(held).touch()
        deadline = time.monotonic() + 60
        while not Path(release).exists():
            if time.monotonic() > deadline:
                raise SystemExit("never released")
            time.sleep(0.01)
    return 1

conn = sqlite3.connect(path, timeout=60, isolation_level=None)
conn.create_function("test_hold", 0, hold)
migrations = load_migrations(Path(folder), store="test")
if mode == "first":
    schema.migrate(conn, migrations)
else:
    # Process B read the version before A committed, so it goes for the lock too: the
    # moment two processes opening an old file at once would both migrate.
    print(schema.schema_version(conn), flush=True)
    schema.migrate_locked(conn, migrations)
print(schema.schema_version(conn), flush=True)
"""


def test_two_processes_migrating_at_once_take_turns(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # as every store connection sets it
    before = row_counts(path)
    folder = migrations_with_extra(tmp_path)
    held, release = tmp_path / "held", tmp_path / "release"

    def start(mode: str) -> subprocess.Popen[str]:
        argv = [
            sys.executable,
            "-c",
            MIGRATOR,
            str(path),
            str(folder),
            mode,
            str(held),
            str(release),
        ]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start("first")
    deadline = time.monotonic() + 60
    while not held.exists():
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "the first migrator never reached its migration"
        time.sleep(0.01)
    second = start("second")
    assert second.stdout is not None
    assert second.stdout.readline().strip() == "1"  # it saw the old version: it must wait
    release.touch()
    out_first, err_first = first.communicate(timeout=60)
    out_second, err_second = second.communicate(timeout=60)
    assert (first.returncode, err_first) == (0, "")
    assert (second.returncode, err_second) == (0, "")
    assert out_first.split() == out_second.split() == [str(schema.SCHEMA_VERSION + 1)]
    assert row_counts(path) == before


def test_a_new_file_gets_every_migration(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        store.migrate()
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert schema.schema_version(conn) == schema.SCHEMA_VERSION
        assert row_counts(tmp_path / "new.db") == dict.fromkeys(TABLES, 0)


def test_a_schema_version_that_is_not_a_number_is_a_clear_error(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tenure_control SET value = 'v1' WHERE key = 'schema_version'")
    store = SQLiteStore(f"sqlite:///{path}")
    try:
        with pytest.raises(ConfigError, match="expected a number, got 'v1'"):
            store.migrate()
    finally:
        store.close()


def test_migrations_numbered_with_a_gap_are_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0003_c.sql").write_text("SELECT 1;")
    with pytest.raises(RuntimeError, match=r"not numbered 1..n: \[1, 3\]"):
        load_migrations(tmp_path, store="test")


def test_statements_split_only_where_a_statement_ends() -> None:
    script = (
        "-- a comment; with a semicolon\n"
        "CREATE TABLE t (x TEXT DEFAULT 'a;b');\n"
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET x = 'c;d'; END;\n"
        "-- trailing comment\n"
    )
    found = schema.statements(script)
    assert [s.splitlines()[-1].split()[1] for s in found] == ["TABLE", "TRIGGER"]
    assert "'a;b'" in found[0] and "'c;d'; END;" in found[1]
    with pytest.raises(ValueError, match="unterminated"):
        schema.statements("CREATE TABLE u (x)")
