"""How the stores report a connection they cannot make, against the real servers: a refusal
that retrying cannot fix (no such database or role, wrong password, malformed URL) is
StoreMisconfigured with the driver's own reason; an outage is StoreUnavailable, on every
backend alike, also at dispatch."""

from __future__ import annotations

import time
from urllib.parse import urlsplit, urlunsplit

import pytest

import tenure
from tenure.core.errors import StoreMisconfigured, StoreUnavailable

from servers import free_port


def with_netloc(url: str, netloc: str | None = None, path: str | None = None) -> str:
    parts = urlsplit(url)
    return urlunsplit(
        parts._replace(
            netloc=parts.netloc if netloc is None else netloc,
            path=parts.path if path is None else path,
        )
    )


def host_of(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2]


def counts_error(url: str) -> Exception:
    app = tenure.App(url)
    try:
        app.counts()
    except Exception as exc:
        return exc
    finally:
        app.close()
    raise AssertionError(f"{url}: counts() worked")


# -- PostgreSQL ------------------------------------------------------------------------------
def test_postgres_missing_database_is_misconfigured_with_libpq_reason(postgres_url: str) -> None:
    exc = counts_error(with_netloc(postgres_url, path="/tenure_no_such_db"))
    assert isinstance(exc, StoreMisconfigured), exc
    assert 'database "tenure_no_such_db" does not exist' in str(exc)


def test_postgres_missing_role_is_misconfigured(postgres_url: str) -> None:
    exc = counts_error(with_netloc(postgres_url, netloc=f"tenure_no_role@{host_of(postgres_url)}"))
    assert isinstance(exc, StoreMisconfigured), exc
    assert 'role "tenure_no_role" does not exist' in str(exc)


def test_postgres_malformed_url_is_misconfigured(postgres_url: str) -> None:
    host = host_of(postgres_url).rsplit(":", 1)[0]
    exc = counts_error(with_netloc(postgres_url, netloc=f"postgres@{host}:notaport"))
    assert isinstance(exc, StoreMisconfigured), exc
    assert '"notaport"' in str(exc)


def test_postgres_closed_port_is_unavailable_at_once(postgres_url: str) -> None:
    started = time.monotonic()
    exc = counts_error(with_netloc(postgres_url, netloc=f"postgres@127.0.0.1:{free_port()}"))
    assert isinstance(exc, StoreUnavailable), exc
    assert "Connection refused" in str(exc)
    assert time.monotonic() - started < 4  # not the pool's 5 s timeout: the reason comes first


# -- Redis -----------------------------------------------------------------------------------
def test_redis_wrong_password_is_misconfigured(redis_url: str) -> None:
    exc = counts_error(with_netloc(redis_url, netloc=f"tenure_no_user:nope@{host_of(redis_url)}"))
    assert isinstance(exc, StoreMisconfigured), exc
    assert "invalid username-password pair" in str(exc)


def test_redis_missing_database_number_is_misconfigured(redis_url: str) -> None:
    exc = counts_error(with_netloc(redis_url, path="/9999"))
    assert isinstance(exc, StoreMisconfigured), exc
    assert "DB index is out of range" in str(exc)


def test_redis_malformed_url_is_misconfigured(redis_url: str) -> None:
    with pytest.raises(StoreMisconfigured, match="notaport"):
        tenure.App(with_netloc(redis_url, netloc="127.0.0.1:notaport")).counts()


def test_redis_outage_at_dispatch_raises_store_unavailable() -> None:
    app = tenure.App(f"redis://127.0.0.1:{free_port()}/0")

    @app.job
    def send(n: int) -> None: ...

    try:
        with pytest.raises(StoreUnavailable, match="Connection refused"):
            send.dispatch(1)  # scripts sent in a pipeline
        with pytest.raises(StoreUnavailable, match="Connection refused"):
            app.counts()  # single commands first
    finally:
        app.close()
