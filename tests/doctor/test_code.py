"""Job code read by AST: client timeouts in every spelling, and the other code rules."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tenure.doctor.astutil import Module
from tenure.doctor.clients import find_client_calls
from tenure.doctor.code import batch_members, check_dispatch_sites, find_jobs

from conftest import FIXTURES, run_in


def calls(source: str) -> dict[str, float | None]:
    """{call as written: its bound} for the first function in `source`."""
    module = Module.parse("/x/jobs.py", "jobs.py", textwrap.dedent(source).encode())
    fn = next(n for n in module.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return {c.call: c.timeout.amount for c in find_client_calls(fn, module)}


def test_requests_spellings() -> None:
    assert calls("""
        import requests as rq
        from requests import post
        T = 4
        def job():
            rq.get("u")
            post("u", timeout=T)
            rq.put("u", timeout=(3.05, 27))
            rq.patch("u", timeout=(3, None))
    """) == {"rq.get": None, "post": 4, "rq.put": 27, "rq.patch": None}  # fmt: skip


def test_sessions_and_clients() -> None:
    assert calls("""
        import requests, httpx
        session = requests.Session()
        def job():
            session.get("u")
            with httpx.Client(timeout=httpx.Timeout(10.0, connect=2.0)) as client:
                client.get("u")
            with httpx.Client(timeout=None) as slow:
                slow.post("u", timeout=3)
            httpx.Client().get("u")
    """) == {
        "session.get": None, "client.get": 10.0, "slow.post": 3, "httpx.Client().get": 5.0,
    }  # fmt: skip


def test_library_defaults_are_the_documented_ones() -> None:
    assert calls("""
        import httpx, aiohttp, boto3, smtplib, socket, urllib.request
        async def job():
            httpx.get("u")
            async with aiohttp.ClientSession() as session:
                await session.get("u")
                await session.post("u")  # the same client: reported once
            boto3.client("s3")
            smtplib.SMTP("h")
            socket.create_connection(("h", 1))
            urllib.request.urlopen("u")
    """) == {
        "httpx.get": 5.0, "session.get": 300.0, "boto3.client": 60.0,
        "smtplib.SMTP": None, "socket.create_connection": None, "urllib.request.urlopen": None,
    }  # fmt: skip


def test_explicit_objects_and_positional_timeouts() -> None:
    assert calls("""
        import aiohttp, boto3, smtplib, socket
        from botocore.config import Config
        from urllib.request import urlopen
        CFG = Config(read_timeout=5, connect_timeout=2)
        async def job():
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=8)) as s:
                await s.get("u")
            boto3.client("s3", config=CFG)
            smtplib.SMTP("h", 25, None, 7)
            socket.create_connection(("h", 1), 3)
            urlopen("u", None, 2)
    """) == {
        "s.get": 8.0, "boto3.client": 5.0, "smtplib.SMTP": 7.0,
        "socket.create_connection": 3.0, "urlopen": 2.0,
    }  # fmt: skip


def test_unknowable_timeouts_are_not_guessed() -> None:
    assert calls("""
        import requests
        from settings import HTTP
        def job(opts):
            requests.get("u", timeout=HTTP.timeout)
            requests.get("u", **opts)
    """) == {}  # fmt: skip


def test_helpers_are_followed_but_not_forever() -> None:
    found = calls("""
        import requests
        def job():
            a()
        def a():
            b()
        def b():
            a()
            requests.get("u")
    """)  # fmt: skip
    assert found == {"requests.get": None}


def parse(source: str) -> Module:
    return Module.parse("/x/jobs.py", "jobs.py", textwrap.dedent(source).encode())


def test_jobs_found_by_decorator_with_their_names() -> None:
    module = parse("""
        @app.job
        def bare(): ...
        @app.job(name="billing.charge", timeout=5)
        async def charge(): ...
        @other.task
        def not_a_job(): ...
    """)  # fmt: skip
    assert [(j.name, j.receiver) for j in find_jobs([module])] == [
        ("bare", "app"),
        ("billing.charge", "app"),
    ]


def test_batch_members_and_their_callbacks() -> None:
    module = parse("""
        def plan():
            app.batch([resize.sig(i) for i in ids], then=notify.sig())
            app.batch([crop.options(queue="x").sig(1), crop.sig(2)])
            app.batch_over_ids(export_rows, 1, 10, chunk=5)
    """)  # fmt: skip
    assert batch_members([module]) == {"resize", "crop", "export_rows"}


@pytest.mark.parametrize(
    ("argument", "rule"),
    [("b'raw'", "payload-bytes"), ("text.encode()", "payload-bytes"),
     ("open(p).read()", "payload-blob"), ("'x' * 3", None), ("upload_id", None)],
)  # fmt: skip
def test_payload_arguments(argument: str, rule: str | None) -> None:
    module = parse(f"def f(p, text, upload_id):\n    resize.dispatch({argument})\n")
    found = [f.rule for f in check_dispatch_sites([module], {"resize"})]
    assert found == ([rule] if rule else [])


def test_async_blocking_calls_point_at_the_call_and_its_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = run_in(FIXTURES / "async_blocking", "fx_async_blocking:app", monkeypatch)
    found = sorted(
        (str(f.location), f.job, "(in fetch_rates())" in f.message)
        for f in report.findings
        if f.rule == "async-blocking-call"
    )
    assert found == [
        ("fx_async_blocking.py:15", "refresh_rates", True),
        ("fx_async_blocking.py:20", "refresh_rates", False),
    ]
