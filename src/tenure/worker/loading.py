"""Find the user's App from a "module:attr" spec, the way uvicorn and celery do."""

from __future__ import annotations

import importlib
import os
import sys

from tenure.app import App
from tenure.errors import ConfigError


def load_app(spec: str) -> App:
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ConfigError(f"--app: expected MODULE:ATTR such as myproject.jobs:app, got {spec!r}")
    # The console script does not put the current directory on sys.path; users expect it.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--app {spec}: cannot import {module_name!r}: {exc}") from exc
    if attr:
        app = getattr(module, attr, None)
    else:
        found = [v for v in vars(module).values() if isinstance(v, App)]
        app = found[0] if len(found) == 1 else None
    if not isinstance(app, App):
        raise ConfigError(
            f"--app {spec}: expected {module_name}.{attr or '<attr>'} to be a tenure.App, "
            f"got {type(app).__name__}"
        )
    return app
