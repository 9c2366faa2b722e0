"""History checks against a real SQLite store, driven through the store API.

The store stamps every time with its own clock, so a test cannot make an attempt last 55 s
without waiting 55 s; durations and the (impossible by design) overlap are made by moving an
attempt's recorded start in the database file afterwards. Everything else is the real API.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import tenure
from tenure.core import causes
from tenure.core.records import Ending, WorkerRecord, WorkerRef
from tenure.doctor.history import Limits, check_history, p95
from tenure.doctor.model import Source
from tenure.job import Job
from tenure.stores.base import Store

from conftest import rule_ids, run_in, write

WORKER = WorkerRef(id="w1", host="test", pid=1)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tenure.App]:
    the_app = tenure.App(f"sqlite:///{tmp_path / 'history.db'}")
    yield the_app
    the_app.close()


def db_path(app: tenure.App) -> str:
    return app.url.removeprefix("sqlite:///")


def stretch(app: tenure.App, job_id: str, number: int, seconds: float) -> None:
    """Make attempt `number` of a job look `seconds` long by moving its start back."""
    with sqlite3.connect(db_path(app)) as conn:
        conn.execute(
            "UPDATE tenure_attempts SET started_at = ended_at - ? WHERE job_id = ? AND number = ?",
            (seconds, job_id, number),
        )


def run(store: Store, job: Job, outcome: str = "succeeded") -> tuple[str, int]:
    """Dispatch one job and end its attempt with `outcome`, as a worker would."""
    job_id = job.dispatch(1).id
    return attempt(store, job.queue, outcome, job_id)


def attempt(store: Store, queue: str, outcome: str, job_id: str) -> tuple[str, int]:
    (reservation,) = store.reserve(queues=[queue], worker=WORKER, lease=30)
    assert reservation.job_id == job_id
    if outcome == "succeeded":
        store.end_attempt(Ending(job_id=job_id, token=reservation.token))
    else:
        store.end_attempt(
            Ending(job_id=job_id, token=reservation.token, outcome=outcome, error="boom")
        )
    return job_id, reservation.attempt


def findings(app: tenure.App) -> list[str]:
    jobs: dict[str, object] = {}
    found = check_history(app.store, jobs, Source("jobs.py", 1))  # type: ignore[arg-type]
    return sorted(f.rule for f in found)


def live_worker(store: Store, queues: tuple[str, ...], stopped: bool = False) -> None:
    now = store.now()
    store.heartbeat(worker=WorkerRecord("w1", "test", 1, queues, 1, now, now))
    if stopped:
        store.heartbeat(worker=WorkerRecord("w1", "test", 1, queues, 1, now, now, stopped_at=now))


def test_p95_is_nearest_rank() -> None:
    assert p95([1.0] * 19 + [50.0]) == 1.0
    assert p95([1.0] * 18 + [50.0, 60.0]) == 50.0
    assert p95([3.0]) == 3.0


def test_clean_history_has_no_findings(app: tenure.App) -> None:
    fast = app.job(timeout=10)(lambda n: None)
    for _ in range(5):
        run(app.store, fast)
    assert findings(app) == []


def test_near_timeout_and_over_budget(app: tenure.App) -> None:
    @app.job(timeout=60)
    def import_feed(n: int) -> None: ...

    for _ in range(4):
        job_id, number = run(app.store, import_feed)
        stretch(app, job_id, number, 55.0)
    assert findings(app) == ["near-timeout", "over-budget"]


def test_over_budget_alone(app: tenure.App) -> None:
    @app.job(timeout=60)
    def export(n: int) -> None: ...

    for _ in range(3):
        job_id, number = run(app.store, export)
        stretch(app, job_id, number, 12.0)
    assert findings(app) == ["over-budget"]


def test_too_few_samples_say_nothing(app: tenure.App) -> None:
    @app.job(timeout=60)
    def rare(n: int) -> None: ...

    job_id, number = run(app.store, rare)
    stretch(app, job_id, number, 59.0)
    assert findings(app) == []


def test_crash_loop(app: tenure.App) -> None:
    @app.job(timeout=10, tries=5, backoff=0)
    def leaky(n: int) -> None: ...

    live_worker(app.store, ("default",))
    job_id = leaky.dispatch(1).id
    for _ in range(3):
        attempt(app.store, "default", "crashed", job_id)
    assert findings(app) == ["crash-loop"]


def test_a_crash_loop_names_its_recorded_cause_and_its_fix(app: tenure.App) -> None:
    @app.job(timeout=10, tries=5, backoff=0)
    def render_video(n: int) -> None: ...

    live_worker(app.store, ("default",))
    job_id = render_video.dispatch(1).id
    readings = (1945.0, 2048.0, 300.0)  # MB, each attempt's last, reported with a heartbeat
    ends = (causes.OOM_KILL, causes.OOM_KILL, causes.SIGKILL)
    for cause, mb in zip(ends, readings, strict=True):
        (reservation,) = app.store.reserve(queues=["default"], worker=WORKER, lease=30)
        app.store.heartbeat(
            worker=WORKER, leases=[(job_id, reservation.token)], lease=30, memory={job_id: mb}
        )
        # the words say another size: the rule reads the recorded field, not the text
        error = "killed by signal 9; its last memory reading was 9.9 GB, 0.3 s before it died"
        app.store.end_attempt(
            Ending(
                job_id=job_id, token=reservation.token, outcome="crashed", error=error, cause=cause
            )
        )
    assert [a.memory_mb for a in app.get_job(job_id).attempts] == list(readings)
    found = check_history(app.store, {}, Source("jobs.py", 1))  # type: ignore[arg-type]
    (loop,) = [f for f in found if f.rule == "crash-loop"]
    text = f"{loop.message} {loop.fix}"
    # the memory its OOM-killed attempts were last read at: theirs, not the other crash's
    assert "2 of 3 were killed by the kernel's OOM killer at about 2.0 GB" in text
    assert "raise the container's memory or split the job" in text


def test_a_crash_loop_without_memory_readings_names_no_size(app: tenure.App) -> None:
    @app.job(timeout=10, tries=5, backoff=0)
    def render_video(n: int) -> None: ...

    live_worker(app.store, ("default",))
    job_id = render_video.dispatch(1).id
    for _ in range(3):
        (reservation,) = app.store.reserve(queues=["default"], worker=WORKER, lease=30)
        app.store.end_attempt(
            Ending(
                job_id=job_id,
                token=reservation.token,
                outcome="crashed",
                error="killed by signal 9; its last memory reading was 1.9 GB, 0.3 s before it "
                "died",
                cause=causes.OOM_KILL,
            )
        )
    found = check_history(app.store, {}, Source("jobs.py", 1))  # type: ignore[arg-type]
    (loop,) = [f for f in found if f.rule == "crash-loop"]
    assert "3 of 3 were killed by the kernel's OOM killer, and each retry" in loop.message


def test_crashes_broken_by_a_failure_are_not_a_loop(app: tenure.App) -> None:
    @app.job(timeout=10, tries=5, backoff=0)
    def flaky(n: int) -> None: ...

    live_worker(app.store, ("default",))
    job_id = flaky.dispatch(1).id
    for outcome in ("crashed", "crashed", "failed", "crashed"):
        attempt(app.store, "default", outcome, job_id)
    assert findings(app) == []


def test_queue_without_live_worker(app: tenure.App) -> None:
    mail = app.job(timeout=10, queue="mail")(lambda n: None)
    mail.dispatch(1)
    assert findings(app) == ["queue-without-worker"]
    live_worker(app.store, ("default",))
    assert findings(app) == ["queue-without-worker"]
    live_worker(app.store, ("default", "mail"))
    assert findings(app) == []
    live_worker(app.store, ("default", "mail"), stopped=True)
    assert findings(app) == ["queue-without-worker"]


def test_a_queue_whose_oldest_ready_job_outwaited_its_timeout_is_stalled(app: tenure.App) -> None:
    mail = app.job(timeout=10, queue="mail")(lambda n: None)
    job_id = mail.dispatch(1).id
    with sqlite3.connect(db_path(app)) as conn:  # ready for 11 s, past its 10 s timeout
        conn.execute("UPDATE tenure_jobs SET run_at = run_at - 11 WHERE id = ?", (job_id,))
    found = check_history(app.store, {}, Source("jobs.py", 1))
    assert [f.rule for f in found] == ["queue-stalled"]
    assert "waited 11 s, longer than its jobs' 10 s timeout" in found[0].message
    assert "tenure queues --max-wait 10" in found[0].fix
    live_worker(app.store, ("mail",))  # someone reads it: waiting is not stalling
    assert findings(app) == []


def test_overlapping_attempts_are_reported_as_a_bug(app: tenure.App) -> None:
    @app.job(timeout=10, tries=3, backoff=0)
    def charge(n: int) -> None: ...

    job_id = charge.dispatch(1).id
    attempt(app.store, "default", "failed", job_id)
    attempt(app.store, "default", "succeeded", job_id)
    with sqlite3.connect(db_path(app)) as conn:  # attempt 1 now "ended" after attempt 2 began
        conn.execute(
            "UPDATE tenure_attempts SET ended_at = ended_at + 60 WHERE job_id = ? AND number = 1",
            (job_id,),
        )
    assert findings(app) == ["attempts-overlap"]


def test_limits_are_adjustable(app: tenure.App) -> None:
    @app.job(timeout=60)
    def medium(n: int) -> None: ...

    for _ in range(3):
        job_id, number = run(app.store, medium)
        stretch(app, job_id, number, 8.0)
    found = check_history(app.store, {}, Source(), Limits(budget_s=10.0))
    assert found == []


def test_doctor_reads_the_apps_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: --app loads the module, its store's history is read, findings point at the
    job's definition."""
    write(tmp_path, {
        "hist_app.py": (
            "import tenure\n\n"
            f"app = tenure.App('sqlite:///{tmp_path / 'app.db'}')\n\n\n"
            "@app.job(timeout=5, kill_after=1, queue='mail')\n"
            "def notify(n: int) -> None:\n"
            "    print(n)\n"
        ),
        "Procfile": "worker: tenure worker --app hist_app:app --queues default,mail\n",
    })  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    import hist_app

    hist_app.notify.dispatch(1)
    report = run_in(tmp_path, "hist_app:app", monkeypatch)
    assert rule_ids(report) == ["queue-without-worker"]
    assert run_in(tmp_path, "hist_app:app", monkeypatch, history=False).findings == []


def test_missing_sqlite_store_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"nostore_app.py": "import tenure\napp = tenure.App('sqlite:///absent.db')\n"})
    report = run_in(tmp_path, "nostore_app:app", monkeypatch)
    assert not (tmp_path / "absent.db").exists()
    assert any(s.path == "history" for s in report.skipped)


def test_waiting_jobs_no_live_worker_knows_are_a_deploy_not_rolled_out(app: tenure.App) -> None:
    old = app.job(timeout=10)(lambda n: None)
    new = app.job(timeout=10, name="report_v2")(lambda n: None)
    new.dispatch(1)
    now = app.store.now()
    knows_old = WorkerRecord("w-old", "h", 1, ("default",), 1, now, now, known=(old.name,))
    app.store.heartbeat(worker=knows_old)
    found = check_history(app.store, {}, Source("jobs.py", 1))
    assert [f.rule for f in found] == ["unknown-job-waiting"]
    assert "1 job(s) waiting in queue 'default' ('report_v2')" in found[0].message
    assert "--unknown-grace" in found[0].message
    knows_new = WorkerRecord("w-new", "h", 2, ("default",), 1, now, now, known=("report_v2",))
    app.store.heartbeat(worker=knows_new)
    assert findings(app) == []


def test_a_job_failed_for_its_unknown_name_is_named_with_the_fix(app: tenure.App) -> None:
    report = app.job(timeout=10, name="report")(lambda n: None)
    live_worker(app.store, ("default",))
    job_id = report.dispatch(1).id
    (r,) = app.store.reserve(queues=["default"], worker=WORKER, lease=30)
    app.store.end_attempt(
        Ending(
            job_id=job_id,
            token=r.token,
            outcome="failed",
            error="unknown job 'report': no worker that knows it ran it within "
            "--unknown-grace 600 s",
            permanent=True,
            cause=causes.UNKNOWN_JOB,
        )
    )
    found = check_history(app.store, {}, Source("jobs.py", 1))
    assert [f.rule for f in found] == ["unknown-job-failed"]
    assert "1 job(s) 'report' failed" in found[0].message and job_id in found[0].message
    assert f"tenure failed retry {job_id}" in found[0].fix
