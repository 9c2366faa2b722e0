"""Corrupted rows written straight into each store, next to ordinary jobs. None may crash a
worker or keep the ordinary jobs from succeeding; each damaged job should end with a reason.

Each corruption takes a freshly dispatched victim job and damages its stored form (or adds a
row that collides with it) with the backend's own client: sqlite3, psycopg, redis-py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from chaos.harness import Project

BAD_POLICY_TYPES = '{"timeout": "soon", "tries": "x", "kill_after": null, "backoff": {}}'

# name -> (column, value) for the job's own row; None: a special case below
JOB_FIELD_CORRUPTIONS: dict[str, tuple[str, Any]] = {
    "payload-not-json": ("payload", "{{not json"),
    "payload-wrong-shape": ("payload", "[1, 2, 3]"),
    "payload-args-not-list": ("payload", '{"args": 5, "kwargs": {}}'),
    "payload-kwargs-not-object": ("payload", '{"args": [], "kwargs": [1]}'),
    "payload-bad-encryption": ("payload", '{"encrypted": "aesgcm-v1", "data": "!!!"}'),
    "payload-wrong-arguments": ("payload", '{"args": [1, 2, 3, 4, 5, 6], "kwargs": {"x": 1}}'),
    "payload-nul-bytes": ("payload", '{"args": ["\\u0000\\u0000"], "kwargs": {}}'),
    "payload-huge": ("payload", json.dumps({"args": [0, 0, True, "x" * 4_000_000]})),
    "unknown-job-name": ("name", "no_such_job"),
    "policy-not-json": ("policy", "garbage"),
    "policy-wrong-types": ("policy", BAD_POLICY_TYPES),
    "policy-negative-timeout": ("policy", '{"timeout": -5, "tries": 1}'),
    "policy-nan-timeout": ("policy", '{"timeout": NaN, "tries": 1}'),
    "state-unknown": ("state", "zombie"),
    "batch-missing": ("batch_id", "no-such-batch"),
}
SPECIAL = ("stray-attempt-row", "once-row-for-other-attempt")
CORRUPTIONS = (*JOB_FIELD_CORRUPTIONS, *SPECIAL)


def corrupter(project: Project) -> Callable[[str, str], None]:
    scheme = project.url.split(":", 1)[0]
    if scheme == "sqlite":
        return _sqlite(project)
    if scheme.startswith("postgres"):
        return _postgres(project)
    return _redis(project)


def _sqlite(project: Project) -> Callable[[str, str], None]:
    path = project.url.removeprefix("sqlite:///")

    def apply(kind: str, job_id: str) -> None:
        db = sqlite3.connect(path, timeout=30)
        try:
            if kind in JOB_FIELD_CORRUPTIONS:
                column, value = JOB_FIELD_CORRUPTIONS[kind]
                db.execute(f"UPDATE tenure_jobs SET {column} = ? WHERE id = ?", (value, job_id))
            elif kind == "stray-attempt-row":
                # an attempt row where the job's next attempt will go (a restore, a bad merge)
                db.execute(
                    "INSERT INTO tenure_attempts (job_id, number, worker_id, host, pid,"
                    " started_at) VALUES (?, 1, 'ghost', 'ghost', 1, 0)",
                    (job_id,),
                )
            elif kind == "once-row-for-other-attempt":
                db.execute(
                    "INSERT INTO tenure_once (job_id, key, attempt, at) VALUES (?, 'other', 7, 0)",
                    (job_id,),
                )
            db.commit()
        finally:
            db.close()

    return apply


def _postgres(project: Project) -> Callable[[str, str], None]:
    import psycopg

    base, _, query = project.url.partition("?")
    schema = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("schema", "tenure")

    def apply(kind: str, job_id: str) -> None:
        try:
            damage(kind, job_id)
        except psycopg.errors.IntegrityError:
            # The schema's own constraints refuse this damage (an unknown state, say): the
            # store is protected from it, which is the outcome the scenario checks for.
            return

    def damage(kind: str, job_id: str) -> None:
        with psycopg.connect(base, autocommit=True) as db:
            if kind in JOB_FIELD_CORRUPTIONS:
                column, value = JOB_FIELD_CORRUPTIONS[kind]
                if column == "payload":
                    value = value.replace("\\u0000", "")  # PostgreSQL text refuses NUL
                db.execute(
                    f'UPDATE "{schema}".tenure_jobs SET {column} = %s WHERE id = %s',
                    (value, job_id),
                )
            elif kind == "stray-attempt-row":
                db.execute(
                    f'INSERT INTO "{schema}".tenure_attempts (job_id, number, worker_id, host,'
                    " pid, started_at) VALUES (%s, 1, 'ghost', 'ghost', 1, 0)",
                    (job_id,),
                )
            elif kind == "once-row-for-other-attempt":
                db.execute(
                    f'INSERT INTO "{schema}".tenure_once (job_id, key, attempt, at)'
                    " VALUES (%s, 'other', 7, 0)",
                    (job_id,),
                )

    return apply


def _redis(project: Project) -> Callable[[str, str], None]:
    import redis

    base, _, query = project.url.partition("?")
    prefix = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("prefix", "tenure")
    client = redis.Redis.from_url(base, decode_responses=True)

    def apply(kind: str, job_id: str) -> None:
        job_key = f"{prefix}:{{q:default}}:job:{job_id}"
        if kind in JOB_FIELD_CORRUPTIONS:
            column, value = JOB_FIELD_CORRUPTIONS[kind]
            client.hset(job_key, column, value)
        elif kind == "stray-attempt-row":
            # layout 4: a job's attempts are fields of its own hash
            client.hset(job_key, mapping={"1.worker_id": "ghost"})
        elif kind == "once-row-for-other-attempt":
            client.hdel(job_key, "name", "policy")  # a job hash missing required fields

    return apply
