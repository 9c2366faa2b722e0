"""Bad input: Hypothesis fuzz of payload decoding and of every entry that takes user data.

Properties (each a function taking an app and a Hypothesis settings object, so the bounded
pytest form and `python -m chaos fuzz` share them):
- payload.decode(any text) returns Arguments or raises PayloadError, nothing else;
- dispatch(any arguments) stores a job whose arguments decode to what JSON makes of them, or
  raises PayloadError, nothing else; nothing is stored when it raises;
- get_job / retry_failed / forget / get_batch / cancel_batch with any id: JobNotFound or
  False, never another exception, and the other jobs are untouched;
- the CLI (`jobs show`, `failed retry`, `failed forget`, `batch watch`, `batch show`, `--url`)
  with any id or URL exits 0/1/2 with a message, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tenure
from tenure.core import payload
from tenure.core.errors import JobNotFound, PayloadError, TenureError

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
# Python values a caller may pass: JSON and things JSON cannot hold
python_values = st.recursive(
    JSON_LEAVES
    | st.floats()
    | st.binary(max_size=8)
    | st.sets(st.integers(), max_size=3)
    | st.complex_numbers(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=3)
    ),
    max_leaves=12,
)
ids = (
    st.text(max_size=40)
    | st.sampled_from(["*", "?", "[a-z]", "{q:default}", "a:b", "' OR 1=1 --", "%s", "\x00", ""])
    | st.from_regex(r"[0-9a-f]{16}", fullmatch=True)
)
DEEP = 200
payload_texts = (
    st.text(max_size=200)
    | json_values.map(json.dumps)
    | st.builds(
        lambda a, k: json.dumps({"args": a, "kwargs": k}),
        json_values,
        json_values,
    )
    | st.builds(lambda d: json.dumps({"encrypted": "aesgcm-v1", "data": d}), st.text(max_size=40))
    | st.integers(min_value=1, max_value=DEEP).map(lambda n: "[" * n)
    | st.integers(min_value=1, max_value=DEEP).map(
        lambda n: '{"args": [' + "[" * n + "]" * n + "]}"
    )
)


FUZZ_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "derandomize": True,
    "database": None,
}


def fuzz_payload_decode(examples: int) -> None:
    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(payload_texts)
    def prop(text: str) -> None:
        try:
            out = payload.decode(text)
        except PayloadError:
            return
        except Exception as exc:
            raise AssertionError(
                f"payload.decode({text[:60]!r}...) raised {type(exc).__name__}, not PayloadError"
            ) from exc
        assert isinstance(out.args, tuple) and isinstance(out.kwargs, dict)

    prop()


def _json_normal(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=False))


def fuzz_dispatch(app: tenure.App, examples: int) -> None:
    job = app.jobs.get("chaos_fuzz_target")
    if job is None:

        @app.job(name="chaos_fuzz_target", timeout=5)
        def chaos_fuzz_target(*args: Any, **kwargs: Any) -> None:
            return None

        job = app.jobs["chaos_fuzz_target"]

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(
        st.lists(python_values, max_size=3),
        st.dictionaries(
            st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), python_values, max_size=3
        ),
    )
    def prop(args: list[Any], kwargs: dict[str, Any]) -> None:
        before = sum(app.counts().values())
        try:
            handle = job.dispatch(*args, **kwargs)
        except PayloadError:
            after = sum(app.counts().values())
            assert after == before, "a refused dispatch stored a job"
            return
        except Exception as exc:
            raise AssertionError(
                f"dispatch({args!r}, {kwargs!r}) raised {type(exc).__name__}: {exc}"
            ) from exc
        stored = payload.decode(app.get_job(handle.id).payload)
        assert list(stored.args) == _json_normal(args)
        assert stored.kwargs == _json_normal(kwargs)

    prop()


def dispatch_is_lossless(app: tenure.App) -> list[str]:
    """Arguments JSON would silently change (not refuse): what a job then receives differs
    from what was dispatched. Returned as findings, not asserted."""
    job = app.jobs.get("chaos_fuzz_target")
    assert job is not None
    findings = []
    for value in ({1: "a"}, {None: 1}, (1, 2), {2.5: 0}):
        try:
            handle = job.dispatch(value)
        except PayloadError:
            continue
        got = payload.decode(app.get_job(handle.id).payload).args[0]
        if got != value:
            findings.append(f"dispatch({value!r}) is stored and delivered as {got!r}")
    return findings


def fuzz_ids(app: tenure.App, examples: int) -> None:
    keep = app.jobs["chaos_fuzz_target"].dispatch(1) if "chaos_fuzz_target" in app.jobs else None

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(ids)
    def prop(job_id: str) -> None:
        for call in (app.get_job, app.get_batch):
            with contextlib.suppress(JobNotFound):
                call(job_id)
        for call in (app.retry_failed, app.forget, app.cancel_batch):
            assert call(job_id) is False, f"{call.__name__}({job_id!r}) did something"

    prop()
    if keep is not None:
        assert app.get_job(keep.id).state == "queued", "an unrelated job changed"


@contextlib.contextmanager
def in_directory(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _cli(args: list[str], tolerate: tuple[type[BaseException], ...] = ()) -> tuple[int, str]:
    """Run the CLI in-process as `main()` would: TenureError is its exit 2, any other
    exception (outside `tolerate`, the known bugs) is a crash."""
    from typer.testing import CliRunner

    from tenure.cli import cli

    result = CliRunner().invoke(cli, args)
    exc = result.exception
    if exc is not None and not isinstance(exc, (SystemExit, TenureError, *tolerate)):
        raise AssertionError(
            f"tenure {' '.join(map(repr, args))} crashed: {type(exc).__name__}: {exc}"
        ) from exc
    code = result.exit_code if not isinstance(exc, TenureError) else 2
    return code, result.output


def fuzz_cli(url: str, examples: int) -> None:
    commands = [
        ["jobs", "show"],
        ["failed", "retry"],
        ["failed", "forget"],
        ["batch", "watch"],
        ["batch", "show"],
        ["batch", "cancel"],
    ]

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(st.sampled_from(commands), ids.filter(lambda s: "\x00" not in s))
    def prop(command: list[str], job_id: str) -> None:
        code, out = _cli([*command, "--url", url, "--", job_id])
        assert code in (0, 1, 2), (command, job_id, code, out)

    prop()


store_urls = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda scheme, rest: f"{scheme}{rest}",
        st.sampled_from(
            [
                "sqlite://",
                "sqlite:///",
                "sqlite:////",
                "postgresql://",
                "postgres://",
                "redis://",
                "rediss://",
                "mysql://",
                "",
                "SQLITE:///",
            ]
        ),
        st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=30),
    ),
)


def _offline(url: str) -> str:
    """Keep fuzzed network URLs on this machine: a closed port answers at once."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgresql", "postgres", "redis", "rediss"):
        return f"{scheme}://127.0.0.1:1/{url.split('//', 1)[-1][:20]}"
    return url


def fuzz_store_urls(examples: int, tolerate: tuple[type[BaseException], ...] = ()) -> None:
    """`tenure jobs list --url URL`: a clear error, never a crash."""
    with tempfile.TemporaryDirectory(prefix="chaos-urls-") as tmp, in_directory(Path(tmp)):

        @settings(max_examples=examples, **FUZZ_SETTINGS)
        @given(store_urls.map(_offline).filter(lambda u: "\x00" not in u))
        def prop(url: str) -> None:
            code, out = _cli(["jobs", "list", "--url", url], tolerate)
            assert code in (0, 1, 2), (url, code, out)

        prop()


def run_all(examples: int, backends: list[str]) -> int:
    """`python -m chaos fuzz`: every property, each backend that works here."""
    from chaos.harness import drop_store, store_url, store_works

    failures = 0
    checks: list[tuple[str, Any]] = [
        ("payload.decode", lambda: fuzz_payload_decode(examples)),
        ("store URLs", lambda: fuzz_store_urls(max(20, examples // 5))),
    ]
    tmp = Path(tempfile.mkdtemp(prefix="chaos-fuzz-"))
    for backend in backends:
        url = store_url(backend, tmp)
        why = store_works(url)
        if why is not None:
            print(f"{backend}: skipped, the store does not work through tenure.App: {why}")
            continue
        app = tenure.App(url)
        checks += [
            (f"{backend} dispatch", lambda app=app: fuzz_dispatch(app, examples)),
            (f"{backend} ids", lambda app=app: fuzz_ids(app, examples)),
            (f"{backend} cli", lambda url=url: fuzz_cli(url, max(20, examples // 5))),
            (f"{backend} lossless", lambda app=app: print("   ", dispatch_is_lossless(app))),
            (f"{backend} drop", lambda url=url: drop_store(url)),
        ]
    for name, check in checks:
        try:
            check()
            print(f"ok   {name}")
        except Exception as exc:
            failures += 1
            print(f"FAIL {name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    return 1 if failures else 0


def is_finite(x: float) -> bool:
    return math.isfinite(x)


if __name__ == "__main__":
    sys.exit(run_all(100, ["sqlite"]))
