"""Every test runs on each real store: SQLite (the `tenure_app` fixture's fresh file) and
PostgreSQL (a fresh database on $EXAMPLES_POSTGRES_URL, default 127.0.0.1:5432 as postgres)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest
from flask.testing import FlaskClient
from flaskexport import db
from flaskexport.web import web

import tenure

CUSTOMERS = 500  # 10 ranges of 50, planned by 2 coordinators (slices of 8)
POSTGRES_ADMIN_URL = os.environ.get(
    "EXAMPLES_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tenure_app: tenure.App) -> Iterator[str]:
    """The app's database and tenure's store, one and the same, with tables and customers."""
    if request.param == "sqlite":
        yield _ready(tenure_app)
        return
    with fresh_postgres_database() as url:
        tenure_app.close()
        tenure_app.url = url  # the plugin puts the SQLite URL back afterwards
        try:
            yield _ready(tenure_app)
        finally:
            tenure_app.close()


@pytest.fixture
def client(database_url: str) -> FlaskClient:
    return web.test_client()


def _ready(app: tenure.App) -> str:
    app.store.migrate()
    db.setup(app.url, customers=CUSTOMERS, credits=3)
    return app.url


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    try:
        import psycopg
    except ImportError:
        _skip("psycopg is not installed (pip install 'tenure[postgres]')")
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        _skip(f"PostgreSQL unreachable at {POSTGRES_ADMIN_URL}: {exc}; set EXAMPLES_POSTGRES_URL")
    name = f"tenure_flask_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(POSTGRES_ADMIN_URL)._replace(path=f"/{name}"))
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _skip(reason: str) -> None:
    """Skip locally; under CI=true a store that cannot be reached fails the run instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)
