"""Bad input: Hypothesis fuzz of payload decoding and of every entry that takes user data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import tenure
from tenure.core import payload
from tenure.core.errors import PayloadError

from chaos import fuzz
from chaos.harness import drop_store, skip_or_fail, store_url, store_works

EXAMPLES = 150


def test_payload_decode_never_raises_anything_but_payload_error() -> None:
    fuzz.fuzz_payload_decode(EXAMPLES)


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> tenure.App:
    url = store_url(request.param, tmp_path)
    why = store_works(url)
    if why is not None:
        drop_store(url)
        skip_or_fail(f"{request.param} store not usable through tenure.App: {why}")
    the_app = tenure.App(url)
    yield the_app
    the_app.close()
    drop_store(url)


def test_dispatch_stores_json_or_refuses(app: tenure.App) -> None:
    fuzz.fuzz_dispatch(app, EXAMPLES)


def test_any_id_is_not_found_and_touches_nothing(app: tenure.App) -> None:
    fuzz.fuzz_dispatch(app, 1)  # registers the target job
    fuzz.fuzz_ids(app, EXAMPLES)


def test_cli_with_any_id_exits_cleanly(app: tenure.App) -> None:
    fuzz.fuzz_cli(app.url, 40)


# Store errors the CLI turns into "error: ..." and exit 2 (the fuzz checks no traceback).
UNREACHABLE = (sqlite3.OperationalError, ValueError, ConnectionError, OSError)


def test_cli_store_urls_exit_cleanly_apart_from_known_bugs() -> None:
    try:
        import psycopg
        import redis

        known: tuple[type[BaseException], ...] = (
            *UNREACHABLE,
            redis.RedisError,
            psycopg.Error,
        )
    except ImportError:
        known = UNREACHABLE
    fuzz.fuzz_store_urls(60, known)


def test_deeply_nested_payload_is_a_payload_error() -> None:
    with pytest.raises(PayloadError):
        payload.decode("[" * 100_000)


def test_deeply_nested_argument_is_refused_at_dispatch(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 't.db'}")

    @app.job(name="deep")
    def deep(x: object) -> None:
        return None

    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(PayloadError):
        deep.dispatch(value)


@pytest.mark.parametrize(
    "url", ["sqlite://", "sqlite:///no/such/dir/x.db", "redis://127.0.0.1:1/0"]
)
def test_unusable_store_url_is_a_clean_cli_error(url: str, tmp_path: Path) -> None:
    with fuzz.in_directory(tmp_path):
        code, _ = fuzz._cli(["jobs", "list", "--url", url])
    assert code == 2
