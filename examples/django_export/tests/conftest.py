"""Every test runs on each real store: SQLite (the `tenure_app` fixture's fresh file, which
Django uses too) and PostgreSQL (a fresh database on $EXAMPLES_POSTGRES_URL, default
127.0.0.1:5432 as postgres). Django's tables are made by its own migrations."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import django
import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exportsite.settings")
# until a test points it at its own database, nothing is written next to the code
SCRATCH = tempfile.mkdtemp(prefix="django-export-")
os.environ.setdefault("EXPORTS_DATABASE_URL", f"sqlite:///{SCRATCH}/unused.db")

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment, teardown_test_environment  # noqa: E402
from exports.models import Account, Customer  # noqa: E402
from exportsite.settings import database_settings  # noqa: E402

import tenure  # noqa: E402

CUSTOMERS = 500  # 10 ranges of 50, planned by 2 coordinators (slices of 8)
POSTGRES_ADMIN_URL = os.environ.get(
    "EXAMPLES_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="session", autouse=True)
def django_test_environment() -> Iterator[None]:
    setup_test_environment()  # the test client's host, in-memory mail
    yield
    teardown_test_environment()
    shutil.rmtree(SCRATCH, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tenure_app: tenure.App) -> Iterator[str]:
    """Django's database and tenure's store, one and the same, migrated and seeded."""
    if request.param == "sqlite":
        with django_database(tenure_app.url):
            yield _ready(tenure_app)
        return
    with fresh_postgres_database() as url:
        tenure_app.close()
        tenure_app.url = url  # the plugin puts the SQLite URL back afterwards
        try:
            with django_database(url):
                yield _ready(tenure_app)
        finally:
            tenure_app.close()


@pytest.fixture
def client(database_url: str) -> Client:
    return Client()


def _ready(app: tenure.App) -> str:
    call_command("migrate", verbosity=0)
    app.store.migrate()
    Customer.objects.bulk_create(
        Customer(id=i, name=f"Customer {i}", email=f"customer{i}@example.com")
        for i in range(1, CUSTOMERS + 1)
    )
    Account.objects.create(id=1, export_credits=3)
    return app.url


@contextmanager
def django_database(url: str) -> Iterator[None]:
    """Point Django's default connection at `url` for the block (as its test runner does
    with a test database)."""
    saved = dict(connections.settings["default"])
    _forget_connection()
    connections.settings["default"].update(database_settings(url))
    try:
        yield
    finally:
        _forget_connection()
        connections.settings["default"].clear()
        connections.settings["default"].update(saved)


def _forget_connection() -> None:
    """The next use opens a new connection from the settings (with their engine)."""
    connections.close_all()
    with contextlib.suppress(AttributeError):  # none was opened yet
        del connections["default"]


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
    name = f"tenure_example_{uuid.uuid4().hex[:12]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _skip(reason: str) -> None:
    """Skip locally; under CI=true a store that cannot be reached fails the run instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)
