"""A worker child's success lines, gathered in a page it shares with its supervisor
(worker/log_spool.py): written together when flushed, in order, and what a dead child left is
written by the supervisor."""

from __future__ import annotations

import os

from tenure import logs
from tenure.worker.log_spool import CAPACITY, LogSpool


def read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def test_lines_go_out_together_in_order_when_flushed() -> None:
    r, w = os.pipe()
    supervisor = LogSpool.create()
    child = LogSpool.attach(supervisor.fd, w)
    child.add("one\n")
    child.add("two\n")
    assert read_all(r) == b""  # gathered, not written
    assert child.due(child.since + 1.0) and not child.due(child.since)
    child.flush()
    assert read_all(r) == b"one\ntwo\n"
    supervisor.drain(w)
    assert read_all(r) == b""  # nothing left twice


def test_a_dead_childs_lines_are_written_by_the_supervisor() -> None:
    r, w = os.pipe()
    supervisor = LogSpool.create()
    child = LogSpool.attach(supervisor.fd, w)
    child.add("before the kill\n")
    supervisor.drain(w)  # the child died before it flushed
    assert read_all(r) == b"before the kill\n"


def test_a_full_page_is_written_before_it_overflows() -> None:
    r, w = os.pipe()
    child = LogSpool.attach(LogSpool.create().fd, w)
    line = "x" * 1000 + "\n"
    written = b""
    for _ in range(CAPACITY // len(line) + 5):
        child.add(line)
        written += read_all(r)
    child.flush()
    written += read_all(r)
    assert written == line.encode() * (CAPACITY // len(line) + 5)


def test_a_process_a_job_forks_writes_its_own_lines() -> None:
    spool = LogSpool.attach(LogSpool.create().fd, None)
    logs._Quick.spool = spool  # as in a worker's child
    try:
        pid = os.fork()
        if pid == 0:  # the forked process: its lines are not gathered in the child's page
            os._exit(0 if logs._Quick.spool is None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert logs._Quick.spool is spool  # the child keeps gathering its own
    finally:
        logs._Quick.spool = None
