"""The JSON endpoints behind the pages, and their OpenAPI description.

Actions accept only `Content-Type: application/json` (or the page's CSRF token in
`X-CSRF-Token`): a cross-site HTML form cannot send either, and the dashboard answers no CORS
preflight, so another site's page cannot retry or forget jobs through a visitor's browser."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tenure import __version__
from tenure.core.errors import CancelRefused, ConfigError, JobNotFound
from tenure.web import views
from tenure.web.jobs_page import unknown_parameter
from tenure.web.retention_page import retention_view, view_json
from tenure.web.security import CSRF_HEADER, csrf_ok
from tenure.web.state import RETRY_ALL_LIMIT, dashboard

MAX_LIST = 1000


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


async def api_retry(request: Request) -> Response:
    refused = action_refused(request)
    if refused is not None:
        return refused
    job_id = request.path_params["job_id"]
    app = dashboard(request).app
    done = await run_in_threadpool(app.retry_failed, job_id)
    if done:
        return JSONResponse({"id": job_id, "retried": True})
    reason = await run_in_threadpool(app.retry_refusal, job_id)
    return JSONResponse({"id": job_id, "retried": False, "reason": reason}, status_code=409)


async def api_forget(request: Request) -> Response:
    refused = action_refused(request)
    if refused is not None:
        return refused
    job_id = request.path_params["job_id"]
    done = await run_in_threadpool(dashboard(request).app.forget, job_id)
    return JSONResponse({"id": job_id, "forgotten": done}, status_code=200 if done else 409)


async def api_cancel(request: Request) -> Response:
    """The job page's Cancel: queued, it never runs; running, its worker stops it."""
    refused = action_refused(request)
    if refused is not None:
        return refused
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


async def api_queue_action(request: Request) -> Response:
    """The overview's Pause / Resume per queue, and purge (`tenure queue purge`)."""
    refused = action_refused(request)
    if refused is not None:
        return refused
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


async def api_retry_all(request: Request) -> Response:
    refused = action_refused(request)
    if refused is not None:
        return refused
    app = dashboard(request).app

    def run() -> int:
        return sum(1 for j in app.failed_jobs(limit=RETRY_ALL_LIMIT) if app.retry_failed(j.id))

    return JSONResponse({"retried": await run_in_threadpool(run)})


async def api_cancel_batch(request: Request) -> Response:
    refused = action_refused(request)
    if refused is not None:
        return refused
    batch_id = request.path_params["batch_id"]
    done = await run_in_threadpool(dashboard(request).app.cancel_batch, batch_id)
    return JSONResponse({"id": batch_id, "cancelled": done}, status_code=200 if done else 409)


async def api_doctor(request: Request) -> Response:
    dash = dashboard(request)
    fresh = request.query_params.get("run") == "1"
    result = await run_in_threadpool(dash.doctor.result, fresh=fresh)
    return JSONResponse(result.as_json())


def openapi(request: Request) -> Response:
    return JSONResponse(OPENAPI)


def _get(summary: str, schema: str, *params: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": list(params),
            "responses": {
                "200": {"description": "OK", "content": _json(schema)},
                "404": {"description": "No such job or batch", "content": _json("Error")},
            },
        }
    }


def _post(summary: str, *params: dict[str, Any]) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "description": "Send Content-Type: application/json (an empty body is fine).",
            "parameters": list(params),
            "responses": {
                "200": {"description": "Done", "content": _json("ActionResult")},
                "409": {
                    "description": "Not in a state that allows it (`reason` says why)",
                    "content": _json("ActionResult"),
                },
                "415": {"description": "Not JSON: refused as a possible cross-site request"},
            },
        }
    }


def _json(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": {"type": kind}}


_NUM = {"type": "number"}
_INT = {"type": "integer"}
_STR = {"type": "string"}
_OPT_NUM = {"type": ["number", "null"]}
_OPT_STR = {"type": ["string", "null"]}
_JOB = {
    "type": "object",
    "properties": {
        "id": _STR, "name": _STR, "queue": _STR,
        "state": {"enum": ["queued", "scheduled", "running", "succeeded", "failed", "cancelled"]},
        "created_at": _NUM, "finished_at": _OPT_NUM, "tries_used": _INT,
        "last_error": _OPT_STR, "batch_id": _OPT_STR,
    },
}  # fmt: skip

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "tenure dashboard API",
        "version": __version__,
        "description": "The JSON behind the dashboard's pages. Times are epoch seconds on the "
        "store's clock. With --auth, send Authorization: Bearer TOKEN.",
    },
    "components": {
        "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {"type": "object", "properties": {"error": _STR}},
            "ActionResult": {"type": "object", "additionalProperties": True},
            "Overview": {
                "type": "object",
                "properties": {
                    "now": _NUM,
                    "counts": {"type": "object", "additionalProperties": _INT},
                    "queues": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": _STR,
                                "waiting": _INT,
                                "scheduled": _INT,
                                "running": _INT,
                                "failed": _INT,
                                "succeeded": _INT,
                                "per_minute": _OPT_NUM,
                                "oldest_ready_age": _OPT_NUM,
                                "paused": {"type": "boolean"},
                                "on_keys": _INT,
                            },
                        },
                    },
                    "workers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": _STR,
                                "host": _STR,
                                "pid": _INT,
                                "queues": {"type": "array"},
                                "last_seen_at": _NUM,
                                "seen_ago_s": _NUM,
                                "alive": {"type": "boolean"},
                            },
                        },
                    },
                    "active": {"type": "boolean"},
                    "unknown_jobs": _INT,
                    "unknown": {"type": "array", "items": {"type": "object"}},
                },
            },
            "Batch": {
                "type": "object",
                "properties": {
                    "id": _STR,
                    "name": _STR,
                    "state": {"enum": ["running", "succeeded", "failed", "cancelled"]},
                    "total": _INT,
                    "done": _INT,
                    "failed": _INT,
                    "cancelled": _INT,
                    "pending": _INT,
                    "progress": {"type": "number", "minimum": 0, "maximum": 1},
                    "per_second": _OPT_NUM,
                    "eta_seconds": _OPT_NUM,
                    "callbacks": {"type": "array"},
                },
            },
            "Batches": {
                "type": "object",
                "properties": {
                    "batches": {"type": "array", "items": {"$ref": "#/components/schemas/Batch"}}
                },
            },
            "JobSummary": _JOB,
            "Jobs": {
                "type": "object",
                "properties": {
                    "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobSummary"}}
                },
            },
            "Job": {
                "allOf": [
                    {"$ref": "#/components/schemas/JobSummary"},
                    {
                        "type": "object",
                        "properties": {
                            "arguments": _STR,
                            "encrypted": {"type": "boolean"},
                            # the stored JSON text of the result; "(encrypted)" when sealed
                            "result": _OPT_STR,
                            "description": {"type": "array", "items": _STR},
                            "attempts": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "number": _INT,
                                        "outcome": _STR,
                                        "worker": _STR,
                                        "host": _STR,
                                        "pid": _INT,
                                        "started_at": _NUM,
                                        "ended_at": _OPT_NUM,
                                        "error": _OPT_STR,
                                        "traceback": _OPT_STR,
                                        "cause": _OPT_STR,
                                        "cause_words": _STR,
                                    },
                                },
                            },
                        },
                    },
                ],
            },
            "Periodic": {
                "type": "object",
                "properties": {
                    "periodic": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": _STR,
                                "expression": _STR,
                                "tz": _STR,
                                "queue": _STR,
                                "catch_up": {"enum": ["latest", "none"]},
                                "next_due": _OPT_NUM,
                                "last_due": _OPT_NUM,
                                "last_job_id": _OPT_STR,
                                "last_state": _OPT_STR,
                                "last_run_at": _OPT_NUM,
                            },
                        },
                    }
                },
            },
            "Retention": {
                "type": "object",
                "properties": {
                    "keep_succeeded": _OPT_NUM,
                    "keep_failed": _OPT_NUM,
                    "overrides": {"type": "array", "items": {"type": "object"}},
                    "due": {"type": "object", "additionalProperties": _INT},
                    "counted_at": _NUM,
                    "count_error": _OPT_STR,
                    "last_prune": {"type": "null"},
                },
            },
            "Doctor": {
                "type": "object",
                "properties": {
                    "ran_at": _NUM,
                    "summary": _STR,
                    "message": _OPT_STR,
                    "findings": {"type": "array", "items": {"type": "object"}},
                },
            },
        },
    },
    "security": [{"token": []}, {}],
    "paths": {
        "/api/overview": _get("Counts per state and queue, rates, live workers", "Overview"),
        "/api/batches": _get("Recent batches, newest first", "Batches", _query("limit", "integer")),
        "/api/batches/{batch_id}": _get(
            "One batch: progress, rate, ETA", "Batch", _path("batch_id")
        ),
        "/api/batches/{batch_id}/cancel": _post("Cancel a running batch", _path("batch_id")),
        "/api/jobs": _get(
            "Jobs, newest first",
            "Jobs",
            _query("state"),
            _query("queue"),
            _query("limit", "integer"),
        ),
        "/api/jobs/{job_id}": _get("One job with every attempt", "Job", _path("job_id")),
        "/api/jobs/{job_id}/retry": _post(
            "Put a failed job back with fresh tries", _path("job_id")
        ),
        "/api/jobs/{job_id}/forget": _post(
            "Delete a finished job and its attempts", _path("job_id")
        ),
        "/api/jobs/{job_id}/cancel": _post(
            "Cancel a job: queued, it never runs; running, its worker stops it", _path("job_id")
        ),
        "/api/queues/{name}/{action}": _post(
            "pause or resume a queue (every worker, every host), or purge it (cancel what waits)",
            _path("name"),
            _path("action"),
        ),
        "/api/failed": _get("Failed jobs, newest first", "Jobs", _query("limit", "integer")),
        "/api/failed/retry-all": _post("Retry every failed job"),
        "/api/periodic": _get(
            "Periodic jobs: schedule, next due time, latest run and its state", "Periodic"
        ),
        "/api/retention": _get(
            "Retention settings, jobs that set their own, rows past their age now", "Retention"
        ),
        "/api/doctor": _get("The doctor's findings", "Doctor", _query("run")),
    },
}
