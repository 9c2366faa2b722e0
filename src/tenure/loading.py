"""Find the user's App from a "module:attr" spec, the way uvicorn and celery do."""

from __future__ import annotations

import importlib
import os
import sys

from tenure.app import App
from tenure.core.errors import ConfigError


def load_app(spec: str) -> App:
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ConfigError(f"--app: expected MODULE:ATTR such as myproject.jobs:app, got {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        dotted = module_name.removesuffix(".py").replace(os.sep, ".").replace("/", ".")
        raise ConfigError(
            f"--app {spec}: MODULE is a dotted module name, not a file path: "
            f"try --app {dotted.strip('.')}:{attr or 'app'} (run from the directory above it)"
        )
    # The console script does not put the current directory on sys.path; users expect it.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as exc:  # the file and line, as the traceback would show them
        where = f"{exc.filename}, line {exc.lineno}" if exc.filename else "its code"
        shown = f": {exc.text.strip()}" if exc.text else ""
        raise ConfigError(f"--app {spec}: {where}: {exc.msg}{shown}") from exc
    except ImportError as exc:
        raise ConfigError(f"--app {spec}: cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module's own code raised while it was imported
        raise ConfigError(
            f"--app {spec}: importing {module_name!r} raised {type(exc).__name__}: {exc} "
            f"({raised_at(exc)}); $TENURE_DEBUG=1 shows the traceback"
        ) from exc
    apps = sorted(name for name, value in vars(module).items() if isinstance(value, App))
    if attr:
        app = getattr(module, attr, None)
    else:
        app = getattr(module, apps[0]) if len(apps) == 1 else None
    if not isinstance(app, App):
        where = getattr(module, "__file__", None) or module_name
        if attr and not hasattr(module, attr):
            what = f"{module_name} ({where}) has no attribute {attr!r}"
        elif attr:
            what = f"{module_name}.{attr} is a {type(app).__name__}, not a tenure.App"
        else:
            what = f"{module_name} ({where}) defines {len(apps)} tenure.App objects"
        found = f"; the tenure.App objects it defines: {', '.join(apps)}" if apps else ""
        hint = f" (try --app {module_name}:{apps[0]})" if len(apps) == 1 else ""
        raise ConfigError(f"--app {spec}: {what}{found}{hint}")
    return app


def raised_at(exc: BaseException) -> str:
    """Where an exception was raised: the innermost frame's file and line."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "no traceback"
    return f"{tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno}"
