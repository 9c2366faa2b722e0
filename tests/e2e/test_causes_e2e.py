"""Every death has a name: a crashed or stopped attempt records its cause (core.causes), which
`tenure jobs show` prints and the worker's metrics count. Real workers and real signals."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.core import causes

from e2e.helpers import Project, state_is, wait_until
from servers import free_port

pytestmark = pytest.mark.slow

TEMPLATE = Path(__file__).with_name("hostile_jobs_template.py")


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'tenure.db'}", TEMPLATE)
    yield p
    p.stop_all()


def test_each_death_is_named_on_its_attempt_in_jobs_show_and_in_metrics(
    project: Project,
) -> None:
    jobs = project.jobs
    expected = {
        jobs.segfaults.dispatch().id: ("crashed", causes.FAULT),
        jobs.exits_mid_attempt.dispatch().id: ("crashed", causes.EXIT),
        jobs.ignores_its_timeout.dispatch().id: ("timed_out", causes.TIMEOUT),
        jobs.unencodable.dispatch().id: ("failed", causes.EXCEPTION),
    }
    sigkill = jobs.killed_from_outside.dispatch().id
    port = free_port()
    project.worker("--metrics-port", str(port))
    for job_id in [*expected, sigkill]:
        wait_until(state_is(project.app, job_id, "failed"), 90, f"job {job_id} to end")
    for job_id, (outcome, cause) in expected.items():
        first = project.app.get_job(job_id).attempts[0]
        assert (first.outcome, first.cause) == (outcome, cause), first
    killed = project.app.get_job(sigkill).attempts[0]
    # no cgroup OOM kill was counted (or none can be read): not called an OOM
    assert (killed.outcome, killed.cause) == ("crashed", causes.SIGKILL)
    assert "from outside the worker; OOM not confirmed" in (killed.error or "")
    # with the attempt's last memory reading as evidence (for an OOM kill, or against it)
    reading = re.search(
        r"its last memory reading was (\d+) MB, [\d.]+ s before it died", killed.error or ""
    )
    assert reading is not None, killed.error
    assert 80 <= int(reading.group(1)) < 1024

    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "tenure",
            "jobs",
            "show",
            sigkill,
            "--app",
            f"{project.module_name}:app",
        ],
        cwd=project.dir,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(project.dir), "PATH": "/usr/bin:/bin"},
    )
    assert shown.returncode == 0, shown.stderr
    assert f"[cause: {causes.words(causes.SIGKILL)}]" in shown.stdout

    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'tenure_crashes_total{job="segfaults",cause="fault"} 1' in page
    assert 'tenure_crashes_total{job="killed_from_outside",cause="sigkill"} 1' in page


def test_an_attempt_still_running_when_a_deploy_kills_its_worker_is_named_so(
    project: Project,
) -> None:
    """SIGTERM (the deploy begins), the grace runs out, SIGKILL: the next worker's sweep names
    the deploy on the attempt, not a vanished worker."""
    h = project.jobs.long_report.dispatch(0.5)
    h2 = project.jobs.long_report.dispatch(60)
    old = project.worker("--lease", "2", "--grace", "60", "--concurrency", "1")
    wait_until(lambda: project.app.get_job(h.id).state == "succeeded", 60, "the first job")
    wait_until(state_is(project.app, h2.id, "running"), 60, "the long job to start")
    wait_until(
        lambda: project.app.get_job(h2.id).attempts[-1].memory_mb,
        30,
        "the attempt's memory reading, reported with a heartbeat",
    )
    old.signal(signal.SIGTERM)
    wait_until(
        lambda: any(w.stopping_at for w in project.app.store.list_workers()),
        30,
        "the worker to record that it is stopping",
    )
    old.signal(signal.SIGKILL)  # the end of the deploy's grace
    old.wait(30)
    project.worker("--lease", "2")
    wait_until(lambda: project.app.get_job(h2.id).attempts[0].outcome, 60, "the rescue")
    first = project.app.get_job(h2.id).attempts[0]
    assert (first.outcome, first.cause) == ("crashed", causes.DEPLOY)
    assert "received SIGTERM at" in (first.error or "")
    # with the evidence: the memory it was last read at (no OOM)
    assert re.search(r"the attempt's last memory reading was \d+ MB", first.error or "")


def test_a_kernel_oom_kill_in_a_memory_limited_cgroup_is_named_with_its_evidence(
    project: Project,
) -> None:
    """The worker runs inside a memory-limited cgroup, as in a container with a memory limit;
    the job outgrows it and the kernel's OOM killer (not the worker) ends it. The attempt says
    so, with the cgroup's counter, its limit and the last memory reading."""
    from e2e.cgroups import memory_cgroup

    with memory_cgroup(limit_mb=400) as procs:
        if procs is None:
            pytest.skip(
                "this machine lets no test create a memory-limited cgroup (cgroup v1 memory "
                "hierarchy or a v2 subtree with the memory controller delegated)"
            )
        h = project.jobs.grows_until_killed.dispatch()
        worker = project.worker("--concurrency", "1", cgroup=procs)
        wait_until(state_is(project.app, h.id, "failed"), 120, "the OOM-killed job to fail")
        worker.kill()
    attempt = project.app.get_job(h.id).attempts[0]
    assert (attempt.outcome, attempt.cause) == ("crashed", causes.OOM_KILL), attempt.error
    error = attempt.error or ""
    assert "by the kernel's OOM killer (counted in its cgroup's memory." in error
    assert "the cgroup's memory limit is 400 MB" in error
    reading = re.search(r"its last memory reading was (\d+) MB", error)
    assert reading is not None, error
    assert 100 <= int(reading.group(1)) <= 400
    # and as a field, for the doctor's crash-loop rule ("... at about N MB")
    assert attempt.memory_mb is not None and 100 <= attempt.memory_mb <= 400
