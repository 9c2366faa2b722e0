"""The small defects a team met on its second day (issue 34, item 5), each with its test:
what `jobs show` says about a pass_result link, a batch member and a worker that died; the
periodic list before any worker ran; app-import errors with their context; a SQLite path that
cannot be opened; @app.periodic stacked on @app.job."""

from __future__ import annotations

import sys
import textwrap
from functools import partial
from pathlib import Path

import pytest

import tenure
from cli import helpers
from tenure.core.errors import ConfigError, StoreMisconfigured
from tenure.core.records import WorkerRef
from tenure.describe import describe_job
from tenure.loading import load_app
from tenure.testing import drain


@pytest.fixture
def app(tmp_path: Path) -> tenure.App:
    the_app = tenure.App(f"sqlite:///{tmp_path / 'd.db'}")

    @the_app.job(name="fetch")
    def fetch(n: int) -> int:
        return n * 10

    @the_app.job(name="upload")
    def upload(size: int, where: str = "s3") -> str:
        return f"{where}:{size}"

    return the_app


def test_a_pass_result_link_shows_the_result_it_is_called_with(app: tenure.App) -> None:
    fetch, upload = app.jobs["fetch"], app.jobs["upload"]
    handle = app.chain([fetch.sig(7), upload.sig(where="gcs")], pass_result=True)
    drain(app, max_jobs=1)  # the first link only: the second is queued with its input
    second = app.get_job(handle.links[1].id)
    assert second.state == "queued"
    lines = describe_job(second)
    assert "  arguments: 70, where='gcs'" in lines, lines  # not "(none)" or "where='gcs'"
    app.close()


def test_jobs_show_names_the_batch_of_a_member(app: tenure.App) -> None:
    batch = app.batch([app.jobs["fetch"].sig(1)], name="nightly")
    (member,) = app.list_jobs(queue="default")
    lines = describe_job(app.get_job(member.id))
    assert f"  batch: {batch.id} (tenure batch show {batch.id})" in lines
    app.close()


def test_a_running_job_whose_lease_expired_says_so(app: tenure.App) -> None:
    handle = app.jobs["fetch"].dispatch(1)
    worker = WorkerRef(id="w-gone", host="h", pid=1)
    app.store.reserve(queues=["default"], worker=worker, lease=30, limit=1)
    record = app.get_job(handle.id)
    assert record.state == "running" and record.lease_expires_at is not None
    fresh = describe_job(record, record.lease_expires_at - 1)
    assert not any("lease expired" in line for line in fresh)
    stale = describe_job(record, record.lease_expires_at + 95)
    assert any("its lease expired 95 s ago" in line for line in stale), stale
    app.close()


run_cli = partial(helpers.run_cli, columns=100)


def test_periodic_list_shows_the_schedules_before_any_store_exists(tmp_path: Path) -> None:
    (tmp_path / "cronjobs.py").write_text(
        textwrap.dedent(
            f"""
            import tenure
            app = tenure.App("sqlite:///{tmp_path / "never.db"}")

            @app.periodic("0 3 * * *")
            def nightly_rollup():
                pass
            """
        )
    )
    shown = run_cli("periodic", "list", "--app", "cronjobs:app", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "nightly_rollup" in shown.stdout and "0 3 * * * (UTC)" in shown.stdout
    assert "none yet" in shown.stdout
    assert "no SQLite store at" in shown.stderr and "no run recorded yet" in shown.stderr
    assert not (tmp_path / "never.db").exists()  # reading created nothing


def write(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text))


def test_app_import_errors_keep_their_context(tmp_path: Path) -> None:
    write(tmp_path / "broken_syntax.py", "import tenure\napp = tenure.App(\n  x = = 1\n")
    write(tmp_path / "raises_on_import.py", "import tenure\nx = {}\nvalue = x['missing']\n")
    write(tmp_path / "two_apps.py", "import tenure\nmain = tenure.App()\nother = tenure.App()\n")
    write(tmp_path / "one_app.py", "import tenure\nqueue_app = tenure.App()\nnot_an_app = 3\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ConfigError) as syntax:
            load_app("broken_syntax:app")
        assert f"{tmp_path / 'broken_syntax.py'}, line" in str(syntax.value)
        with pytest.raises(ConfigError) as raised:
            load_app("raises_on_import:app")
        text = str(raised.value)
        assert "raised KeyError: 'missing'" in text
        assert f"{tmp_path / 'raises_on_import.py'}, line 3" in text
        with pytest.raises(ConfigError) as missing:
            load_app("one_app:app")
        text = str(missing.value)
        assert "has no attribute 'app'" in text and "got NoneType" not in text
        assert "try --app one_app:queue_app" in text
        with pytest.raises(ConfigError, match=r"one_app\.not_an_app is a int, not a tenure\.App"):
            load_app("one_app:not_an_app")
        with pytest.raises(ConfigError, match=r"defines 2 tenure\.App objects.*: main, other"):
            load_app("two_apps")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("broken_syntax", "raises_on_import", "two_apps", "one_app"):
            sys.modules.pop(name, None)


def test_dispatch_to_a_sqlite_path_that_cannot_be_opened_names_it(tmp_path: Path) -> None:
    where = tmp_path / "no_such_dir" / "jobs.db"
    app = tenure.App(f"sqlite:///{where}")

    @app.job
    def ping() -> None: ...

    with pytest.raises(StoreMisconfigured) as caught:
        ping.dispatch()
    assert f"the directory {where.parent} does not exist" in str(caught.value)
    app.close()


def test_periodic_over_job_is_a_clear_error(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'p.db'}")
    with pytest.raises(ConfigError, match=r"registers the job itself; remove the @app\.job"):

        @app.periodic("0 * * * *")
        @app.job
        def hourly() -> None: ...
