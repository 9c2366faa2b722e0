"""The dashboard's Starlette application: server-rendered pages and the actions behind them.

Store calls block, so every endpoint is a plain function: Starlette runs those in its thread
pool and a slow store never stalls the event loop."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tenure import describe
from tenure.app import App
from tenure.core.errors import CancelRefused, ConfigError
from tenure.core.states import JOB_STATES
from tenure.core.urls import redact
from tenure.web import views
from tenure.web.api import api_routes, bad_request
from tenure.web.doctor_page import DoctorRunner
from tenure.web.jobs_page import JobFilters, JobList, job_list
from tenure.web.retention_page import keep_text, retention_view
from tenure.web.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    Guard,
    csrf_ok,
    csrf_token,
    session_value,
    token_matches,
)
from tenure.web.state import Dashboard, dashboard, retry_all_failed

HERE = Path(__file__).parent
FAILED_PAGE_LIMIT = 500
NOTICES = {
    "retried": "The job is back in its queue with fresh tries.",
    "not-failed": "Nothing to retry: the job is not failed (someone may have retried it).",
    "batch-settled": "Not retried: its batch has already failed, been cancelled or finished, "
    "and its callbacks ran; retrying one member cannot undo that. Dispatch the job again on "
    "its own, or start a new batch for the work that is left.",
    "forgotten": "The job and its attempts were deleted.",
    "not-forgotten": "Nothing deleted: the job is not finished.",
    "retried-all": "{n} failed job(s) are back in their queues.",
    "cancelled": "The batch is cancelled: its queued jobs will not start.",
    "not-cancelled": "Nothing cancelled: the batch is not running.",
    "job-cancelled": "The job is cancelled: it will not run.",
    "job-stopping": "The job is running: its worker stops it within a heartbeat (the cancel "
    "signal, then a kill after its kill_after), and its attempt ends cancelled.",
    "job-finished": "Nothing cancelled: the job has finished already.",
    "queue-paused": "The queue is paused: no worker takes its jobs until it is resumed.",
    "queue-resumed": "The queue is resumed: workers take its jobs again.",
    "queue-unnamed": "Nothing paused or resumed: the form named no queue.",
    "signed-out": "Signed out.",
}


def create_app(
    tenure_app: App,
    *,
    auth_token: str | None = None,
    app_spec: str | None = None,
    project_root: str = ".",
) -> Starlette:
    """The dashboard for `tenure_app`. Without `auth_token` it answers loopback clients only;
    `app_spec` (MODULE:ATTR) lets the doctor page run the same checks as `tenure doctor`."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        ago=views.ago_text,
        duration=views.duration_text,
        when=views.when_text,
        num=_num,
        keep=keep_text,
    )
    env.globals["store_url"] = redact(tenure_app.url)
    dash = Dashboard(
        app=tenure_app,
        auth_token=auth_token,
        meter=views.RateMeter(),
        doctor=DoctorRunner(app_spec, os.path.abspath(project_root)),
        templates=env,
    )
    routes = [
        Route("/", overview_page, name="overview"),
        Route("/batches", batches_page, name="batches"),
        Route("/batches/{batch_id}", batch_page, name="batch"),
        Route("/batches/{batch_id}/cancel", cancel_batch, methods=["POST"]),
        Route("/jobs", jobs_page, name="jobs"),
        Route("/jobs/{job_id}", job_page, name="job"),
        Route("/jobs/{job_id}/retry", retry_job, methods=["POST"]),
        Route("/jobs/{job_id}/forget", forget_job, methods=["POST"]),
        Route("/jobs/{job_id}/cancel", cancel_job, methods=["POST"]),
        Route("/queues/pause", pause_queue, methods=["POST"]),
        Route("/queues/resume", resume_queue, methods=["POST"]),
        Route("/failed", failed_page, name="failed"),
        Route("/failed/retry-all", retry_all, methods=["POST"]),
        Route("/periodic", periodic_page, name="periodic"),
        Route("/retention", retention_page, name="retention"),
        Route("/doctor", doctor_page, name="doctor"),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        *api_routes(),
    ]
    web = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, auth_token=auth_token)],
        exception_handlers={404: not_found, ConfigError: bad_request},
    )
    web.state.dashboard = dash
    return web


def _num(value: int | float) -> str:
    return f"{value:,}".replace(",", "\u202f")  # a thin space groups digits in every locale


def render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    dash = dashboard(request)
    notice_key = request.query_params.get("notice", "")
    notice = NOTICES.get(notice_key, "").format(n=_int(request.query_params.get("n")))
    context = {"active": False, **context}
    body = dash.templates.get_template(template).render(
        request=request,
        path=request.url.path,
        csrf=csrf_token(request),
        notice=notice,
        signed_in=dash.auth_token is not None and SESSION_COOKIE in request.cookies,
        **context,
    )
    response = HTMLResponse(body, status_code=status_code)
    new = getattr(request.state, "new_csrf", None)
    if new is not None:
        response.set_cookie(CSRF_COOKIE, new, httponly=True, samesite="strict", path="/")
    return response


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


async def form_of(request: Request) -> dict[str, str]:
    """An urlencoded form; parsed here so the dashboard needs no multipart library."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


async def checked_form(request: Request) -> dict[str, str] | Response:
    form = await form_of(request)
    if not csrf_ok(request, form.get(CSRF_FIELD)):
        return Response(
            "403: the form's CSRF token is missing or stale; reload the page and try again\n",
            status_code=403,
            media_type="text/plain",
        )
    return form


def not_found(request: Request, exc: Exception) -> Response:
    if request.url.path.startswith("/api/"):
        from starlette.responses import JSONResponse

        return JSONResponse({"error": "not found"}, status_code=404)
    # a typo in the address: a page is not a record of the store that could be forgotten
    return render(request, "not_found.html", {"page": request.url.path}, 404)


# -- pages -----------------------------------------------------------------------------------
def overview_page(request: Request) -> Response:
    dash = dashboard(request)
    data = views.overview(dash.app, dash.meter)
    batches = [
        views.batch_view(dash.app, b, data.now, callbacks=False)
        for b in dash.app.list_batches(limit=5)
    ]
    active = data.active or any(b.active for b in batches)
    return render(request, "overview.html", {"o": data, "batches": batches, "active": active})


def batches_page(request: Request) -> Response:
    dash = dashboard(request)
    now = dash.app.now()
    batches = [
        views.batch_view(dash.app, b, now, callbacks=False)
        for b in dash.app.list_batches(limit=100)
    ]
    return render(
        request,
        "batches.html",
        {"batches": batches, "active": any(b.active for b in batches)},
    )


MEMBERS_SHOWN = 100  # a batch page lists its newest members; `tenure batch show --members`


def batch_page(request: Request) -> Response:
    dash = dashboard(request)
    record = dash.app.find_batch(request.path_params["batch_id"])
    if record is None:
        shown = {"what": "batch", "ident": request.path_params["batch_id"]}
        return render(request, "not_found.html", shown, 404)
    v = views.batch_view(dash.app, record, dash.app.now())
    members = dash.app.list_jobs(batch_id=record.id, limit=MEMBERS_SHOWN + 1)
    shown = {"b": v, "active": v.active, "members": members[:MEMBERS_SHOWN]}
    return render(request, "batch.html", shown | {"more": len(members) > MEMBERS_SHOWN})


def job_page(request: Request) -> Response:
    dash = dashboard(request)
    job_id = request.path_params["job_id"]
    record = dash.app.find_job(job_id)
    if record is None:
        # a chain link not dispatched yet: no row, but its chain says what it waits for
        waiting = describe.waiting_link(job_id, dash.app.find_job)
        shown = {"what": "job", "ident": job_id, "waiting": waiting}
        return render(request, "not_found.html", shown, 404)
    v = views.job_view(record, dash.app.now(), dash.app)
    return render(request, "job.html", {"j": v, "active": v.active})


def failed_page(request: Request) -> Response:
    dash = dashboard(request)
    jobs = dash.app.failed_jobs(limit=FAILED_PAGE_LIMIT)
    count = dash.app.counts().get("failed", 0)
    return render(
        request,
        "failed.html",
        {"jobs": jobs, "count": count, "limit": FAILED_PAGE_LIMIT, "active": False},
    )


def jobs_page(request: Request) -> Response:
    app = dashboard(request).app
    wanted = request.query_params.get("id", "").strip()
    if wanted and app.find_job(wanted) is not None:
        return RedirectResponse(f"/jobs/{quote(wanted, safe='')}", status_code=303)
    filters, problem = JobFilters.of(request.query_params)
    listing = JobList([], 0, False) if wanted else job_list(app, filters)
    context = {
        "filters": filters,
        "problem": problem,
        "listing": listing,
        "wanted_id": wanted,
        "queues": sorted(w.queue for w in app.queue_waits()),
        "states": JOB_STATES,
    }
    return render(request, "jobs.html", context, status_code=400 if problem else 200)


def periodic_page(request: Request) -> Response:
    rows = dashboard(request).app.periodic_status()
    return render(request, "periodic.html", {"rows": rows, "active": False})


def retention_page(request: Request) -> Response:
    view = retention_view(dashboard(request).app)
    return render(request, "retention.html", {"r": view, "active": False})


async def doctor_page(request: Request) -> Response:
    dash = dashboard(request)
    fresh = request.query_params.get("run") == "1"
    result = await run_in_threadpool(dash.doctor.result, fresh=fresh)
    return render(request, "doctor.html", {"d": result, "active": False})


# -- actions: POST, CSRF-checked, confirmed, then redirect (a reload never repeats them) ------
@dataclass(frozen=True)
class Question:
    """The confirmation page of an action. `fields`: the form's own values, sent again with
    the confirmation."""

    title: str
    detail: str
    button: str
    back: str
    fields: dict[str, str] = field(default_factory=dict)


async def confirmed_form(
    request: Request, ask: Callable[[dict[str, str]], Question | Awaitable[Question]]
) -> dict[str, str] | Response:
    """The form, CSRF-checked, once the person confirmed it; until then the response to send
    instead: a 403 for a bad token, or the page that asks `ask(form)`."""
    form = await checked_form(request)
    if isinstance(form, Response) or form.get("confirmed") == "1":
        return form
    question = ask(form)
    if not isinstance(question, Question):
        question = await question
    context: dict[str, Any] = {"title": question.title, "detail": question.detail}
    context["back"] = question.back
    context |= {"button": question.button, "fields": question.fields, "active": False}
    return render(request, "confirm.html", context)


def redirect(path: str, **params: object) -> RedirectResponse:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return RedirectResponse(f"{path}?{query}" if query else path, status_code=303)


async def retry_job(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    form = await confirmed_form(
        request,
        lambda _: Question(
            f"Retry job {job_id}?",
            "It goes back to its queue with fresh tries; a worker runs it again.",
            "Retry",
            f"/jobs/{job_id}",
        ),
    )
    if isinstance(form, Response):
        return form
    app = dashboard(request).app
    done = await run_in_threadpool(app.retry_failed, job_id)
    if done:
        return redirect(f"/jobs/{job_id}", notice="retried")
    record = await run_in_threadpool(app.find_job, job_id)
    # still failed after a refused retry: the store keeps members of a settled batch failed
    refused = record is not None and record.state == "failed"
    return redirect(f"/jobs/{job_id}", notice="batch-settled" if refused else "not-failed")


async def forget_job(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    form = await confirmed_form(
        request,
        lambda _: Question(
            f"Forget job {job_id}?",
            "The job and every attempt recorded for it are deleted. This cannot be undone.",
            "Forget",
            f"/jobs/{job_id}",
        ),
    )
    if isinstance(form, Response):
        return form
    done = await run_in_threadpool(dashboard(request).app.forget, job_id)
    if not done:
        return redirect(f"/jobs/{job_id}", notice="not-forgotten")
    return redirect("/failed", notice="forgotten")


async def retry_all(request: Request) -> Response:
    app = dashboard(request).app

    async def ask(_: dict[str, str]) -> Question:
        count = await run_in_threadpool(lambda: app.counts().get("failed", 0))
        return Question(
            f"Retry all {count} failed job(s)?",
            "Each goes back to its queue with fresh tries.",
            "Retry all",
            "/failed",
        )

    form = await confirmed_form(request, ask)
    if isinstance(form, Response):
        return form
    n = await run_in_threadpool(retry_all_failed, app)
    return redirect("/failed", notice="retried-all", n=n)


async def cancel_batch(request: Request) -> Response:
    batch_id = request.path_params["batch_id"]
    form = await confirmed_form(
        request,
        lambda _: Question(
            f"Cancel batch {batch_id}?",
            "Its queued jobs will not start; running ones finish and see the batch cancelled.",
            "Cancel the batch",
            f"/batches/{batch_id}",
        ),
    )
    if isinstance(form, Response):
        return form
    done = await run_in_threadpool(dashboard(request).app.cancel_batch, batch_id)
    return redirect(f"/batches/{batch_id}", notice="cancelled" if done else "not-cancelled")


async def cancel_job(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    form = await confirmed_form(
        request,
        lambda _: Question(
            f"Cancel job {job_id}?",
            "Queued or scheduled, it never runs. Running, its worker stops it (the cancel "
            "signal, then a kill after its kill_after); no try is used and it is not retried.",
            "Cancel the job",
            f"/jobs/{job_id}",
        ),
    )
    if isinstance(form, Response):
        return form
    try:
        done = await run_in_threadpool(dashboard(request).app.cancel, job_id)
    except CancelRefused:
        return redirect(f"/jobs/{job_id}", notice="job-finished")
    notice = "job-cancelled" if done.state == "cancelled" else "job-stopping"
    return redirect(f"/jobs/{job_id}", notice=notice)


async def pause_queue(request: Request) -> Response:
    return await _pause(request, paused=True)


async def resume_queue(request: Request) -> Response:
    return await _pause(request, paused=False)


async def _pause(request: Request, *, paused: bool) -> Response:
    verb = "Pause" if paused else "Resume"

    def ask(form: dict[str, str]) -> Question:
        queue = form.get("queue", "")
        detail = (
            "No worker on any host takes its jobs until it is resumed; running jobs go on and "
            "dispatching still works."
            if paused
            else "Workers take its ready jobs again."
        )
        return Question(
            f"{verb} queue {queue!r}?", detail, f"{verb} the queue", "/", {"queue": queue}
        )

    form = await confirmed_form(request, ask)
    if isinstance(form, Response):
        return form
    app = dashboard(request).app
    try:
        await run_in_threadpool(
            app.pause_queue if paused else app.resume_queue, form.get("queue", "")
        )
    except ConfigError:
        return redirect("/", notice="queue-unnamed")
    return redirect("/", notice="queue-paused" if paused else "queue-resumed")


# -- signing in (only with --auth) -----------------------------------------------------------
async def login(request: Request) -> Response:
    dash = dashboard(request)
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//"):
        target = "/"  # never an open redirect to another site
    if dash.auth_token is None:
        return RedirectResponse(target, status_code=303)
    error = ""
    if request.method == "POST":
        form = await checked_form(request)
        if isinstance(form, Response):
            return form
        if token_matches(form.get("token", ""), dash.auth_token):
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                SESSION_COOKIE,
                session_value(dash.auth_token),
                httponly=True,
                samesite="strict",
                path="/",
                secure=request.url.scheme == "https",
            )
            return response
        error = "That token is not the one this dashboard was started with."
    status = 401 if error else 200
    return render(request, "login.html", {"error": error, "next": target, "active": False}, status)


async def logout(request: Request) -> Response:
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    response = redirect("/login", notice="signed-out")
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
