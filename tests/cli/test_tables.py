"""Every table and bar fits the terminal: each command rendered at 80 and at 120 columns,
ids and states whole, the long text folded (never lost), a column left out only when it
must be, and then named on stderr."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

import tenure
from cli import helpers
from tenure.cli.tables import Column, bar_columns, fit, print_table
from tenure.testing import drain

ERROR = "the upstream billing service answered 503 Service Unavailable after 30 s; " * 2
NAME = "[bold]nightly[/bold] export of every customer record"

JOBS = textwrap.dedent(
    f"""
    import tenure

    app = tenure.App("sqlite:///{{db}}")

    @app.job(tries=1)
    def generate_monthly_invoice_report(n):
        raise RuntimeError({ERROR!r})

    @app.job
    def noop(n):
        return n

    @app.periodic("*/5 * * * *", tz="Europe/Amsterdam")
    def nightly_cleanup_of_expired_sessions():
        pass

    @app.periodic("0 3 * * *")
    def rollup():
        pass
    """
)


def render(table: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(table)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_fit_keeps_ids_and_states_whole_and_folds_the_text(width: int) -> None:
    columns = [Column("id"), Column("job", "cut", floor=10), Column("queue", "cut", floor=7)]
    columns += [Column("state"), Column("tries", drop=2), Column("dispatched", drop=1)]
    columns += [Column("last error", "fold", floor=14)]
    when = "2026-11-30 14:03:22 UTC"
    rows = [["3932d651bd007a4a", "generate_monthly_invoice_report", "default", "succeeded"]]
    rows[0] += ["1", when, ERROR]
    fitted = fit(columns, rows, width)
    lines = render(fitted.table, width)
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    assert "3932d651bd007a4a" in text and "succeeded" in text
    assert " ".join(text.split()).count("Service Unavailable") == 2  # folded, not cut
    if width == 120:
        assert fitted.left_out == ["dispatched"] or fitted.left_out == []
    else:
        assert "tries" in fitted.left_out  # the first to go, named


def test_a_table_whose_essential_columns_cannot_fit_folds_its_cells_losing_no_row() -> None:
    # ids and a dated time are whole: at 40 columns they cannot fit, and Rich left alone
    # squeezes such a table until its rows vanish
    columns = [Column("id"), Column("status"), Column("last heartbeat")]
    rows = [["w-dead001", "silent", "2026-12-06 22:51:00 UTC"], ["w-live01", "live", "now"]]
    out = Console(width=40, file=io.StringIO(), record=True)
    print_table(out, Console(file=io.StringIO()), columns, rows)
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 40
    joined = "".join(text.split())  # folded cells read back across their lines
    assert "w-dead001" in joined and "w-live01" in joined and "silent" in joined
    assert "2026-12-0622:51:00UTC" in joined


def test_a_table_that_fits_is_left_as_it_is() -> None:
    fitted = fit([Column("id"), Column("name", "cut")], [["abc", "short"]], 80)
    assert fitted.left_out == []
    assert "abc  short" in "\n".join(render(fitted.table, 80))


@pytest.mark.parametrize("width", [80, 120])
def test_the_batch_bar_keeps_its_counts_whole(width: int) -> None:
    name, columns = bar_columns(width, NAME, 93)
    assert name.endswith("…") and NAME.startswith(name[:-1])
    assert len(name) <= 24
    _, wide = bar_columns(width, "short", 93)
    assert len(wide) == len(columns)


def run_cli(*args: str, cwd: Path, width: int) -> subprocess.CompletedProcess[str]:
    return helpers.run_cli(*args, "--app", "widejobs:app", cwd=cwd, columns=width)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    """A store with failed jobs of a long name and error, a batch named like markup, a job
    in a long queue name, and two periodic jobs."""
    directory = tmp_path_factory.mktemp("wide")
    (directory / "widejobs.py").write_text(JOBS.format(db=directory / "w.db"))
    sys.path.insert(0, str(directory))
    try:
        import widejobs

        failed = [widejobs.generate_monthly_invoice_report.dispatch(i).id for i in range(2)]
        widejobs.noop.options(queue="very-long-queue-name-for-reports").dispatch(1)
        batch = widejobs.app.batch([widejobs.noop.sig(i) for i in range(93)], name=NAME)
        drain(widejobs.app, queues=["default"])
        widejobs.app.close()
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("widejobs", None)
    assert isinstance(batch, tenure.app.BatchHandle)
    return directory, failed, batch.id


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(
    "command",
    [
        ["jobs", "list", "--state", "failed"],
        ["failed", "list"],
        ["batch", "list"],
        ["batch", "watch", "BATCH"],
        ["batch", "show", "BATCH", "--members", "--limit", "5"],
        ["periodic", "list"],
        ["queues"],
    ],
)
def test_every_table_fits_the_terminal(
    project: tuple[Path, list[str], str], command: list[str], width: int
) -> None:
    directory, failed, batch_id = project
    args = [batch_id if a == "BATCH" else a for a in command]
    result = run_cli(*args, cwd=directory, width=width)
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if not line.startswith("batch ")]
    assert max(len(line) for line in table) <= width, result.stdout
    flat = " ".join(result.stdout.split())
    if command[0] in ("jobs", "failed"):
        assert all(job_id in result.stdout for job_id in failed)  # ids whole
        assert "failed" in flat
    if command == ["failed", "list"]:
        assert flat.count("Service Unavailable") == 4  # the reasons folded, whole
    if command[0] == "batch":
        assert "93/93" in result.stdout or "100.0%" in result.stdout
        assert "[bold]nightly" in result.stdout  # the name as stored, not as markup
    if "--members" in command:  # its members, whole ids and states, bounded by --limit
        members = [line for line in table if "noop" in line]
        assert len(members) == 5 and all("succeeded" in line for line in members), table
        assert "5 member(s) shown (--limit for more)" in result.stdout
    if command == ["periodic", "list"]:
        assert "(Europe/Amsterdam)" in result.stdout  # the zone never split
        assert "nightly_cleanup" in result.stdout
    if width == 120:
        assert "left out" not in result.stderr
