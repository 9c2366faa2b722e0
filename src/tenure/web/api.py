"""The JSON endpoints behind the pages (their OpenAPI description: tenure.web.openapi).

Actions accept only `Content-Type: application/json` (or the page's CSRF token in
`X-CSRF-Token`): a cross-site HTML form cannot send either, and the dashboard answers no CORS
preflight, so another site's page cannot retry or forget jobs through a visitor's browser."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tenure.core.errors import CancelRefused, ConfigError, JobNotFound
from tenure.web import views
from tenure.web.jobs_page import unknown_parameter
from tenure.web.openapi import OPENAPI
from tenure.web.retention_page import retention_view, view_json
from tenure.web.security import CSRF_HEADER, csrf_ok
from tenure.web.state import dashboard, retry_all_failed

MAX_LIST = 1000

Handler = Callable[[Request], Awaitable[Response]]


def api_routes() -> list[Route]:
    return [
        Route("/api/openapi.json", openapi),
        Route("/api/overview", api_overview),
        Route("/api/batches", api_batches),
        Route("/api/batches/{batch_id}", api_batch),
        Route("/api/batches/{batch_id}/cancel", api_cancel_batch, methods=["POST"]),
        Route("/api/jobs", api_jobs),
        Route("/api/jobs/{job_id}", api_job),
        Route("/api/jobs/{job_id}/retry", api_retry, methods=["POST"]),
        Route("/api/jobs/{job_id}/forget", api_forget, methods=["POST"]),
        Route("/api/jobs/{job_id}/cancel", api_cancel, methods=["POST"]),
        Route("/api/queues/{name}/{action}", api_queue_action, methods=["POST"]),
        Route("/api/failed", api_failed),
        Route("/api/failed/retry-all", api_retry_all, methods=["POST"]),
        Route("/api/periodic", api_periodic),
        Route("/api/retention", api_retention),
        Route("/api/doctor", api_doctor),
    ]


def action_refused(request: Request) -> Response | None:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "application/json" or csrf_ok(request, request.headers.get(CSRF_HEADER)):
        return None
    return JSONResponse(
        {"error": "actions need Content-Type: application/json (or X-CSRF-Token)"},
        status_code=415,
    )


def action(handler: Handler) -> Handler:
    """An endpoint that changes something: refused (415) unless the request is JSON or carries
    the page's CSRF token, before the handler runs (see the module's docstring)."""

    @functools.wraps(handler)
    async def checked(request: Request) -> Response:
        refused = action_refused(request)
        if refused is not None:
            return refused
        return await handler(request)

    return checked


def bad_request(request: Request, exc: Exception) -> Response:
    """A ConfigError from the request's values (a mistyped state or parameter): 400, not 500."""
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": str(exc)}, status_code=400)
    return Response(f"400: {exc}\n", status_code=400, media_type="text/plain")


def missing(what: str, ident: str) -> JSONResponse:
    return JSONResponse({"error": f"no {what} with id {ident!r}"}, status_code=404)


def limit_of(request: Request, default: int, accepted: tuple[str, ...] = ("limit",)) -> int:
    """The list's `limit`; a typo in it or in a parameter's name is a ConfigError (400)."""
    problem = unknown_parameter(request.query_params, accepted)
    text = request.query_params.get("limit", str(default))
    if problem is None and not text.strip().isdigit():
        problem = f"limit: expected a whole number, got {text!r}"
    if problem is not None:
        raise ConfigError(problem)
    return max(1, min(int(text), MAX_LIST))


def api_overview(request: Request) -> Response:
    dash = dashboard(request)
    return JSONResponse(views.overview_json(views.overview(dash.app, dash.meter)))


def api_batches(request: Request) -> Response:
    app = dashboard(request).app
    now = app.now()
    return JSONResponse(
        {
            "batches": [
                views.batch_json(views.batch_view(app, b, now, callbacks=False))
                for b in app.list_batches(limit=limit_of(request, 50))
            ]
        }
    )


def api_batch(request: Request) -> Response:
    app = dashboard(request).app
    batch_id = request.path_params["batch_id"]
    record = app.find_batch(batch_id)
    if record is None:
        return missing("batch", batch_id)
    return JSONResponse(views.batch_json(views.batch_view(app, record, app.now())))


def api_jobs(request: Request) -> Response:
    app = dashboard(request).app
    q = request.query_params
    limit = limit_of(request, 100, ("state", "queue", "limit"))
    jobs = app.list_jobs(state=q.get("state") or None, queue=q.get("queue") or None, limit=limit)
    return JSONResponse({"jobs": [views.job_summary_json(j) for j in jobs]})


def api_job(request: Request) -> Response:
    app = dashboard(request).app
    job_id = request.path_params["job_id"]
    record = app.find_job(job_id)
    if record is None:
        return missing("job", job_id)
    return JSONResponse(views.job_json(views.job_view(record, app.now(), app)))


def api_failed(request: Request) -> Response:
    app = dashboard(request).app
    jobs = app.failed_jobs(limit=limit_of(request, 100))
    return JSONResponse({"jobs": [views.job_summary_json(j) for j in jobs]})


def api_periodic(request: Request) -> Response:
    statuses = dashboard(request).app.periodic_status()
    return JSONResponse({"periodic": [asdict(p) for p in statuses]})


def api_retention(request: Request) -> Response:
    return JSONResponse(view_json(retention_view(dashboard(request).app)))


@action
async def api_retry(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    app = dashboard(request).app
    done = await run_in_threadpool(app.retry_failed, job_id)
    if done:
        return JSONResponse({"id": job_id, "retried": True})
    if await run_in_threadpool(app.find_job, job_id) is None:
        return missing("job", job_id)
    reason = await run_in_threadpool(app.retry_refusal, job_id)
    return JSONResponse({"id": job_id, "retried": False, "reason": reason}, status_code=409)


@action
async def api_forget(request: Request) -> Response:
    job_id, app = request.path_params["job_id"], dashboard(request).app
    if await run_in_threadpool(app.forget, job_id):
        return JSONResponse({"id": job_id, "forgotten": True})
    record = await run_in_threadpool(app.find_job, job_id)
    if record is None:
        return missing("job", job_id)
    reason = f"job {job_id} is {record.state}, not finished; nothing deleted"
    return JSONResponse({"id": job_id, "forgotten": False, "reason": reason}, status_code=409)


@action
async def api_cancel(request: Request) -> Response:
    """The job page's Cancel: queued, it never runs; running, its worker stops it."""
    job_id = request.path_params["job_id"]
    try:
        done = await run_in_threadpool(dashboard(request).app.cancel, job_id)
    except JobNotFound:
        return missing("job", job_id)
    except CancelRefused as exc:
        return JSONResponse({"id": job_id, "cancelled": False, "reason": str(exc)}, 409)
    return JSONResponse(
        {"id": job_id, "cancelled": True, "state": done.state, "message": done.message}
    )


QUEUE_ACTIONS = ("pause", "resume", "purge")


@action
async def api_queue_action(request: Request) -> Response:
    """The overview's Pause / Resume per queue, and purge (`tenure queue purge`)."""
    name, action = request.path_params["name"], request.path_params["action"]
    if action not in QUEUE_ACTIONS:
        return JSONResponse(
            {"error": f"expected one of {', '.join(QUEUE_ACTIONS)}, got {action!r}"}, 404
        )
    app = dashboard(request).app
    try:
        if action == "purge":
            cancelled = await run_in_threadpool(app.purge, name)
            return JSONResponse({"queue": name, "purged": True, "cancelled": cancelled})
        call = app.pause_queue if action == "pause" else app.resume_queue
        await run_in_threadpool(call, name)
    except ConfigError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    return JSONResponse({"queue": name, "paused": action == "pause"})


@action
async def api_retry_all(request: Request) -> Response:
    retried = await run_in_threadpool(retry_all_failed, dashboard(request).app)
    return JSONResponse({"retried": retried})


@action
async def api_cancel_batch(request: Request) -> Response:
    batch_id, app = request.path_params["batch_id"], dashboard(request).app
    if await run_in_threadpool(app.cancel_batch, batch_id):
        return JSONResponse({"id": batch_id, "cancelled": True})
    record = await run_in_threadpool(app.find_batch, batch_id)
    if record is None:
        return missing("batch", batch_id)
    reason = f"batch {batch_id} is {record.state}: only a running batch is cancelled"
    return JSONResponse({"id": batch_id, "cancelled": False, "reason": reason}, status_code=409)


async def api_doctor(request: Request) -> Response:
    dash = dashboard(request)
    fresh = request.query_params.get("run") == "1"
    result = await run_in_threadpool(dash.doctor.result, fresh=fresh)
    return JSONResponse(result.as_json())


def openapi(request: Request) -> Response:
    return JSONResponse(OPENAPI)
