"""The dashboard: `tenure dashboard --app MODULE:ATTR`. Needs the `web` extra (Starlette,
Jinja2, uvicorn); importing this package needs none of them, so the CLI can always load."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tenure.web.server import create_app


def __getattr__(name: str) -> object:
    if name == "create_app":
        from tenure.web.server import create_app

        return create_app
    raise AttributeError(f"module 'tenure.web' has no attribute {name!r}")


__all__ = ["create_app"]
