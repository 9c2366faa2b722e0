"""The dashboard: `tenure dashboard --app MODULE:ATTR`. Needs the `web` extra (Starlette,
Jinja2, uvicorn)."""

from tenure.web.server import create_app

__all__ = ["create_app"]
