from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from tenure.core.errors import ConfigError, JobNotFound, UnknownJob
from tenure.job import Sig


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    return tenure.App(f"sqlite:///{tmp_path / 't.db'}")


def test_definition_errors_say_what_was_expected(app: tenure.App) -> None:
    def f() -> None: ...

    with pytest.raises(ConfigError, match=r"job 'f': tries=None \(unlimited\) needs retry_until"):
        app.job(tries=None, name="f")(f)
    with pytest.raises(ConfigError, match="job 'f': retry_until: expected a timedelta"):
        app.job(name="f", retry_until=30)(f)  # type: ignore[call-overload]


def test_duplicate_names_are_refused(app: tenure.App) -> None:
    def one() -> None: ...

    def two() -> None: ...

    app.job(name="same")(one)
    with pytest.raises(ConfigError, match="already used"):
        app.job(name="same")(two)


def test_dispatch_options_and_state(app: tenure.App) -> None:
    @app.job(queue="mail", retry_until=timedelta(minutes=5), tries=None)
    def send(n: int) -> None: ...

    now_job = send.dispatch(1)
    later = send.options(delay=60, queue="low").dispatch(2)
    assert app.get_job(now_job.id).state == "queued"
    info = app.get_job(later.id)
    assert info.state == "scheduled" and info.queue == "low"
    assert info.policy.retry_until is not None
    assert info.policy.retry_until - info.created_at == pytest.approx(300, abs=5)
    assert app.counts()["scheduled"] == 1


def test_dispatch_many_is_all_or_nothing(app: tenure.App) -> None:
    @app.job
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3  # calling the job runs it here and now
    handles = add.dispatch_many([(1, 2), (3, 4), add.sig(5, 6)])
    assert len({h.id for h in handles}) == 3
    with pytest.raises(tenure.PayloadError):
        add.dispatch_many([(1, 2), (object(), 1)])
    assert app.counts()["queued"] == 3
    with pytest.raises(UnknownJob):
        app.dispatch_sigs([Sig("nope")])


def test_unknown_job_id_is_a_clear_error(app: tenure.App) -> None:
    with pytest.raises(JobNotFound, match="no job with id 'abc'"):
        app.get_job("abc")


def test_current_outside_a_job_is_an_error() -> None:
    with pytest.raises(tenure.TenureError, match="only available inside a running job"):
        tenure.current()


def test_dispatch_inside_the_applications_sqlite_transaction(
    app: tenure.App, tmp_path: Path
) -> None:
    import sqlite3

    @app.job
    def welcome(user_id: int) -> None: ...

    app.counts()  # the store creates its schema on first use
    path = app.url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path, timeout=30)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO users VALUES (1)")
    welcome.options(conn=conn).dispatch(1)
    conn.rollback()
    assert app.counts()["queued"] == 0  # the request failed: no user, and no job
    conn.execute("INSERT INTO users VALUES (2)")
    h = welcome.options(conn=conn).dispatch(2)
    assert app.counts()["queued"] == 0  # not visible before the commit
    conn.commit()
    assert app.get_job(h.id).state == "queued"
    other = sqlite3.connect(tmp_path / "other.db")
    with pytest.raises(ConfigError, match="not to this store's file"):
        welcome.options(conn=other).dispatch(3)
    other.close()
    conn.close()


def test_first_dispatch_of_a_fresh_process_inside_a_write_transaction(tmp_path: Path) -> None:
    """A web process's first dispatch may come inside its own write transaction: tenure must
    not need the write lock just to find the schema is already there."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    tenure.App(url).counts()  # another process created the schema earlier
    fresh = tenure.App(url)

    @fresh.job
    def audit(n: int) -> None: ...

    conn = sqlite3.connect(tmp_path / "shared.db", timeout=2)
    conn.execute("CREATE TABLE orders (n INTEGER)")
    conn.commit()
    conn.execute("INSERT INTO orders VALUES (1)")  # the caller now holds the write lock
    h = audit.options(conn=conn).dispatch(1)
    conn.commit()
    conn.close()
    assert fresh.get_job(h.id).state == "queued"


def test_dispatch_checks_the_call_against_the_signature(app: tenure.App) -> None:
    @app.job
    def send_invoice(order_id: int, *, copy: bool = False) -> None: ...

    with pytest.raises(TypeError, match=r"too many positional arguments.*send_invoice\(order_id"):
        send_invoice.dispatch(1, 2)
    with pytest.raises(TypeError, match="missing a required argument: 'order_id'"):
        send_invoice.dispatch()
    with pytest.raises(TypeError, match="unexpected keyword argument 'cpy'"):
        send_invoice.dispatch(1, cpy=True)
    with pytest.raises(TypeError, match="too many positional"):
        send_invoice.dispatch_many([(1,), (2, 3)])  # one bad call: nothing of the lot is stored
    with pytest.raises(TypeError, match="missing a required argument"):
        app.batch([send_invoice.sig(1), send_invoice.sig()])
    assert app.counts().get("queued", 0) == 0
    assert app.list_batches() == []
    send_invoice.dispatch(7, copy=True)
    assert app.counts()["queued"] == 1


def test_a_misspelled_job_setting_is_named_with_the_known_ones(app: tenure.App) -> None:
    def f() -> None: ...

    with pytest.raises(ConfigError, match=r"@app.job on .*f: unknown setting 'tmeout'; expected"):
        app.job(tmeout=5)(f)  # type: ignore[call-overload]
    assert not any(job.fn is f for job in app.jobs.values())
