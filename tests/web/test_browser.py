"""Acceptance 1 and 2 in headless Chromium (Debian's, driven by Playwright): real worker
processes, a real `tenure dashboard` process, and screenshots of every page at desktop and phone
width in artefacts/screenshots/ (not committed). No fixed sleeps: every wait is on a condition."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenure.testing import drain
from web.helpers import DashboardProcess, WebProject

from e2e.helpers import wait_until

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("TENURE_CHROMIUM", "/usr/bin/chromium")
ARTEFACTS = Path(
    os.environ.get("TENURE_ARTEFACTS", Path(__file__).resolve().parents[2] / "artefacts")
)
SHOTS = ARTEFACTS / "screenshots"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM}: run ./scripts/browser (or set TENURE_CHROMIUM)")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


class Tab:
    """A page on one dashboard that fails the test on any console error (a CSP violation, a
    script error) or any request to another host (the dashboard must work offline)."""

    def __init__(self, browser: Any, server: DashboardProcess, viewport: dict[str, int]) -> None:
        self.base = server.base
        self.context = browser.new_context(viewport=viewport, color_scheme="light")
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", self._request)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def _request(self, request: Any) -> None:
        if not request.url.startswith((self.base, "data:")):
            self.foreign.append(request.url)

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        return self.page

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()
        assert self.errors == [], self.errors
        assert self.foreign == [], self.foreign


@pytest.fixture
def server(project: WebProject) -> DashboardProcess:
    s = project.dashboard()
    s.wait_ready()
    return s


@pytest.fixture
def tab(browser: Any, server: DashboardProcess) -> Iterator[Tab]:
    t = Tab(browser, server, DESKTOP)
    yield t
    t.close()


RECORD_PROGRESS = """() => {
  window.__sameDocument = true;
  window.__seen = [Number(document.getElementById('batch-bar').value)];
  new MutationObserver(() => {
    const bar = document.getElementById('batch-bar');
    if (bar) window.__seen.push(Number(bar.value));
  }).observe(document.getElementById('main'), {subtree: true, childList: true});
}"""


def test_a_batch_of_2000_jobs_fills_its_progress_bar_without_a_reload(
    project: WebProject, tab: Tab
) -> None:
    jobs = project.jobs
    batch = project.app.batch(
        [jobs.tick.sig(i) for i in range(2000)],
        name="invoices",
        total=2000,
        then=jobs.done.sig("then"),
    )
    page = tab.open(f"/batches/{batch.id}")
    expect = playwright_api.expect
    expect(page.locator("#batch-state")).to_have_text("running")
    expect(page.locator("#batch-bar")).to_have_attribute("max", "2000")
    page.evaluate(RECORD_PROGRESS)
    project.worker("--concurrency", "2")

    expect(page.locator("#batch-state")).to_have_text("succeeded", timeout=90_000)
    expect(page.locator("#batch-percent")).to_have_text("100.0%")
    seen: list[float] = page.evaluate("window.__seen")
    assert page.evaluate("window.__sameDocument") is True  # never reloaded
    assert seen[0] == 0 and seen[-1] == 2000, seen
    assert any(0 < v < 2000 for v in seen), f"the bar never showed progress in between: {seen}"
    assert seen == sorted(seen), f"progress went backwards: {seen}"
    # the then callback is listed once it has run, and the page stops polling
    expect(page.locator("#batch-progress")).to_contain_text("then")
    expect(page.locator("#live-status")).to_contain_text("updates paused")
    tab.shot("batch-desktop")


def test_retry_a_failed_job_from_the_page_and_see_it_succeed(project: WebProject, tab: Tab) -> None:
    job_id = project.jobs.fails_first.dispatch(7).id
    project.worker()
    wait_until(lambda: project.app.get_job(job_id).state == "failed", 60, "the job to fail")

    page = tab.open("/failed")
    row = page.locator(f"#job-{job_id}")
    playwright_api.expect(row).to_contain_text("first attempt fails on purpose")
    tab.shot("failed-desktop")
    questions: list[str] = []

    def accept(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    row.get_by_role("button", name=f"Retry job fails_first {job_id}").click()
    page.wait_for_url(f"**/jobs/{job_id}?notice=retried")
    assert questions and "Retry job fails_first" in questions[0]
    playwright_api.expect(page.locator("#job-state")).to_have_text("succeeded", timeout=60_000)
    bars = page.locator(".timeline li.attempt")
    playwright_api.expect(bars).to_have_count(2)
    assert bars.evaluate_all("els => els.map(e => e.dataset.outcome)") == ["failed", "succeeded"]


def test_a_crashed_then_succeeded_job_shows_both_bars(project: WebProject, tab: Tab) -> None:
    job_id = project.jobs.crashes_first.dispatch().id
    project.worker("--burst")
    wait_until(lambda: project.app.get_job(job_id).state == "succeeded", 60, "the second try")

    page = tab.open(f"/jobs/{job_id}")
    crashed = page.locator(".timeline rect.bar.outcome-crashed")
    succeeded = page.locator(".timeline rect.bar.outcome-succeeded")
    playwright_api.expect(crashed).to_be_visible()
    playwright_api.expect(succeeded).to_be_visible()
    first, second = crashed.bounding_box(), succeeded.bounding_box()
    assert first["width"] > 0 and second["width"] > 0
    assert first["x"] <= second["x"]  # on one time axis: the crash came first
    playwright_api.expect(page.locator(".timeline")).to_contain_text("crashed")
    playwright_api.expect(
        page.get_by_role("img", name="Attempt 1 crashed", exact=False)
    ).to_be_visible()
    tab.shot("job-desktop")


def test_the_retention_view_counts_what_is_past_its_age(project: WebProject, tab: Tab) -> None:
    jobs = project.jobs
    for n in range(3):
        jobs.done.options(keep_succeeded=0).dispatch(f"gone {n}")
    jobs.always_fails.options(keep_failed=0).dispatch(1)
    jobs.done.dispatch("kept for the App's day")
    assert sorted(j.state for j in drain(project.app)) == ["failed"] + ["succeeded"] * 4
    wait_until(lambda: project.app.prune(dry_run=True).jobs == 4, 30, "four past their age")

    page = tab.open("/")
    page.get_by_role("link", name="Retention").click()
    page.wait_for_url("**/retention")
    expect = playwright_api.expect
    expect(page.get_by_role("heading", level=1)).to_have_text("Retention")
    expect(page.locator("#keep-succeeded")).to_have_text("1 day")
    expect(page.locator("#keep-failed")).to_have_text("14 days")
    expect(page.locator("#due-jobs td")).to_have_text("4")
    expect(page.locator("#due-attempts td")).to_have_text("4")
    expect(page.locator("#retention-last-prune")).to_contain_text("does not record")
    tab.shot("retention-desktop")

    assert project.app.prune().jobs == 4  # what a worker's sweep or `tenure prune` does
    page.reload()
    expect(page.locator("#due-jobs td")).to_have_text("0")
    assert project.app.counts()["succeeded"] == 1


def test_every_page_at_desktop_and_phone_width(
    project: WebProject, browser: Any, server: DashboardProcess
) -> None:
    jobs = project.jobs
    failed = jobs.always_fails.dispatch(3).id
    crashed = jobs.crashes_first.dispatch().id
    batch = project.app.batch([jobs.tick.sig(i) for i in range(40)], name="rows", total=60)
    project.worker("--burst").wait(60)
    assert project.app.get_job(failed).state == "failed"
    jobs.tick.options(delay=3600).dispatch(99)
    pages = {
        "overview": "/",
        "batches": "/batches",
        "batch": f"/batches/{batch.id}",
        "job": f"/jobs/{crashed}",
        "failed": "/failed",
        "jobs": "/jobs",
        "retention": "/retention",
        "doctor": "/doctor",
    }
    for width_name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        t = Tab(browser, server, viewport)
        try:
            for name, path in pages.items():
                page = t.open(path)
                playwright_api.expect(page.locator("h1")).to_be_visible()
                overflow = page.evaluate(
                    "document.scrollingElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 0, f"{name} scrolls sideways at {width_name} width"
                t.shot(f"{name}-{width_name}")
        finally:
            t.close()
    for name in pages:
        for width_name in ("desktop", "phone"):
            assert (SHOTS / f"{name}-{width_name}.png").stat().st_size > 1000
