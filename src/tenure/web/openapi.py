"""The dashboard API's OpenAPI description, served at /api/openapi.json (tenure.web.api)."""

from __future__ import annotations

from typing import Any

from tenure import __version__


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
                "404": {"description": "No such job or batch", "content": _json("Error")},
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
