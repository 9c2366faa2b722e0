"""The child process that runs sync attempts, one at a time, for its supervisor.

Messages are one JSON object per line over two pipes. The child ignores SIGINT and SIGTERM:
shutdown is the supervisor's decision, so a Ctrl-C in the terminal cannot kill a job behind
the supervisor's back. SIGUSR1 raises JobTimeout inside the job (the soft timeout); SIGUSR2
tells the job its lease is in danger (`tenure.current().lease_ok()` turns False).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import traceback
from types import FrameType
from typing import IO, Any

from tenure import payload, tracing
from tenure.context import JobContext, activate, deactivate
from tenure.errors import JobTimeout, JobTransactionEnded, PayloadError
from tenure.worker.loading import load_app

SOFT_TIMEOUT_SIGNAL = signal.SIGUSR1
LEASE_DANGER_SIGNAL = signal.SIGUSR2
PR_SET_PDEATHSIG = 1


class _State:
    running = False
    lease_ok = True


def _on_soft_timeout(signum: int, frame: FrameType | None) -> None:
    # Only while a job runs: a late signal must not break the child's own loop.
    if _State.running:
        raise JobTimeout()


def _on_lease_danger(signum: int, frame: FrameType | None) -> None:
    _State.lease_ok = False


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this child when the supervisor dies, so that a killed worker's job
    cannot keep running while another worker re-runs it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def run_one(app: Any, message: dict[str, Any]) -> dict[str, Any]:
    """Run one attempt and describe how it ended."""
    try:
        job = app.get_definition(message["name"])
        arguments = payload.decode(message["payload"])
    except LookupError as exc:
        return {"status": "error", "kind": "permanent", "error": str(exc)}
    except PayloadError as exc:
        return {"status": "error", "kind": "permanent", "error": f"corrupt payload: {exc}"}
    ctx = JobContext(
        job_id=message["job_id"],
        name=message["name"],
        queue=message["queue"],
        attempt=message["attempt"],
        batch_id=message.get("batch_id"),
        token=message.get("token", message["attempt"]),
        _app=app,
        _lease_ok=lambda: _State.lease_ok,
        _transactional=job.transactional,
    )
    # the attempt's span (a no-op unless the app uses OpenTelemetry), linked to its dispatch
    span = tracing.attempt_started(ctx, arguments.trace)
    token = activate(ctx)
    _State.lease_ok = True
    _State.running = True
    try:
        job.fn(*arguments.args, **arguments.kwargs)
        _State.running = False
        try:
            ended = _finish_transaction(ctx)
        except JobTransactionEnded as exc:
            # Part of its work may be committed already: running it again could do it twice,
            # so it fails for good and a person decides (`tenure failed retry`).
            span.end("failed", exc)
            return {"status": "error", "kind": "permanent", "error": str(exc)}
        span.end("succeeded" if ended.get("accepted", True) else "lost_lease")
        return ended
    except JobTimeout as exc:
        _State.running = False
        _abandon_transaction(ctx)
        span.end("timed_out", exc)
        return {"status": "error", "kind": "timeout", "traceback": traceback.format_exc()}
    except BaseException as exc:  # the job's own error, whatever it is, ends only this attempt
        _State.running = False
        _abandon_transaction(ctx)
        span.end("failed", exc)
        return {
            "status": "error",
            "kind": "exception",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    finally:
        _State.running = False
        deactivate(token)


def _finish_transaction(ctx: JobContext) -> dict[str, Any]:
    """Commit the job's own writes with its completion, here in the child, in one commit."""
    if ctx._transaction is None:
        return {"status": "ok"}
    result = ctx._transaction.complete()
    return {"status": "ok", "completed": True, "accepted": result.accepted, "state": result.state}


def _abandon_transaction(ctx: JobContext) -> None:
    if ctx._transaction is not None:
        ctx._transaction.rollback()


def serve(app_spec: str, inbox: IO[str], outbox: IO[str]) -> None:
    app = load_app(app_spec)
    _send(outbox, {"status": "ready", "pid": os.getpid()})
    for line in inbox:
        message = json.loads(line)
        _send(outbox, run_one(app, message))


def _send(outbox: IO[str], message: dict[str, Any]) -> None:
    outbox.write(json.dumps(message) + "\n")
    outbox.flush()


def main() -> None:
    die_with_parent(int(sys.argv[4]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(SOFT_TIMEOUT_SIGNAL, _on_soft_timeout)
    signal.signal(LEASE_DANGER_SIGNAL, _on_lease_danger)
    app_spec, inbox_fd, outbox_fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(inbox_fd, encoding="utf-8") as inbox, open(outbox_fd, "w", encoding="utf-8") as out:
        serve(app_spec, inbox, out)


if __name__ == "__main__":
    main()
