"""One database for Django's tables and tenure's jobs: `EXPORTS_DATABASE_URL`, default
`sqlite:///exports.db`; `postgresql://user@host:port/name` for PostgreSQL."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

TENURE_URL = os.environ.get("EXPORTS_DATABASE_URL", "sqlite:///exports.db")


def database_settings(url: str) -> dict[str, Any]:
    if url.startswith("sqlite:///"):
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": url.removeprefix("sqlite:///")}
    parts = urlsplit(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
INSTALLED_APPS = ["exports.apps.ExportsConfig"]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "exportsite.urls"
DATABASES = {"default": database_settings(TENURE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
