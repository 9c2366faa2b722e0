"""The worker's entry point, Django set up first (the jobs use the ORM):
`tenure worker --app exportsite.worker:app`."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exportsite.settings")
django.setup()

from exports.jobs import app  # noqa: E402

__all__ = ["app"]
