"""A worker always stops when asked and says why: while its store is unreachable, when the store
refuses it (exit 2 with the driver's reason), when its SQLite file is deleted, and on a second
Ctrl-C, which its first Ctrl-C announces. Real worker processes and real servers."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from e2e.helpers import Project, state_is, wait_until
from e2e.tree_helpers import messages, tree_project
from servers import free_port

pytestmark = pytest.mark.slow

# Generous: a worker that honours a stop request ends within a second or two; one that
# ignores it (the bug) never ends at all.
STOP_DEADLINE_S = 20


def url_with(url: str, *, netloc: str | None = None, path: str | None = None) -> str:
    parts = urlsplit(url)
    return urlunsplit(
        parts._replace(netloc=netloc or parts.netloc, path=parts.path if path is None else path)
    )


@pytest.fixture
def sqlite_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    with tree_project(tmp_path, f"sqlite:///{tmp_path / 'tenure.db'}", monkeypatch) as p:
        yield p


def test_missing_postgres_database_exits_2_with_the_reason_and_masks_the_password(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = urlsplit(postgres_url).netloc.rpartition("@")[2]
    url = url_with(postgres_url, netloc=f"postgres:s3cret-pw@{host}", path="/tenure_no_such_db")
    with tree_project(tmp_path, url, monkeypatch) as project:
        worker = project.worker()
        assert worker.wait(STOP_DEADLINE_S) == 2
        said = messages(worker)
    log = "\n".join(said)
    assert 'database "tenure_no_such_db" does not exist' in log
    assert "retrying in" not in log  # refused at once, not retried
    assert "postgres:***@" in said[0] and "tenure_no_such_db" in said[0], said[0]
    assert "s3cret-pw" not in log


def test_wrong_redis_password_exits_2_with_the_reason(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = urlsplit(redis_url).netloc.rpartition("@")[2]
    with tree_project(
        tmp_path, url_with(redis_url, netloc=f"nobody:nope@{host}"), monkeypatch
    ) as p:
        worker = p.worker()
        assert worker.wait(STOP_DEADLINE_S) == 2
        assert "invalid username-password pair" in "\n".join(messages(worker))


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_worker_stops_on_request_while_its_store_is_unreachable(
    scheme: str, signum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{scheme}://postgres@127.0.0.1:{free_port()}/0"  # nothing listens there
    with tree_project(tmp_path, url, monkeypatch) as project:
        worker = project.worker()
        wait_until(lambda: "retrying in" in worker.log(), 60, "the worker to retry registering")
        worker.signal(signum)
        assert worker.wait(STOP_DEADLINE_S) == 0
        assert "Connection refused" in worker.log()


def test_first_ctrl_c_announces_the_grace_and_the_second_records_the_truth(
    sqlite_project: Project,
) -> None:
    project = sqlite_project
    worker = project.worker("--grace", "60")
    h = project.jobs.sleep_for.dispatch(120)
    wait_until(lambda: project.ledger.events(h.id, "start"), 60, "the job to start")
    worker.signal(signal.SIGINT)
    wait_until(lambda: "waiting up to --grace 60 s" in worker.log(), 30, "the announcement")
    assert "a second Ctrl-C or SIGTERM hands them back now" in worker.log()
    worker.signal(signal.SIGINT)
    assert worker.wait(STOP_DEADLINE_S) == 0
    attempt = project.app.get_job(h.id).attempts[0]
    assert attempt.outcome == "interrupted"
    error = attempt.error or ""
    assert "a second SIGINT" in error and "SIGINT received" in error, error
    assert "outlived" not in error


def test_worker_notices_its_sqlite_file_deleted_and_exits_2(sqlite_project: Project) -> None:
    project = sqlite_project
    worker = project.worker("--lease", "3")
    h = project.jobs.noop.dispatch()
    wait_until(state_is(project.app, h.id, "succeeded"), 60, "the worker to run a job")
    path = project.app.store.path
    assert f"(file {path})" in messages(worker)[0]  # the first line names the file
    project.app.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    assert worker.wait(STOP_DEADLINE_S) == 2
    assert f"the SQLite store file {path} was deleted or replaced" in "\n".join(messages(worker))
