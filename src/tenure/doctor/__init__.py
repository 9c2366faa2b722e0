"""`tenure doctor`: the four clocks (client call < job timeout < worker grace < platform grace)
read together from job code, worker options, deployment files and the store's history.

Needs the `doctor` extra (PyYAML, tree-sitter); importing this package needs neither, so the
CLI can always load and name the extra when it is missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tenure.doctor.engine import CannotRun, diagnose
    from tenure.doctor.model import Finding, Report

_HOMES = {
    "CannotRun": "tenure.doctor.engine",
    "diagnose": "tenure.doctor.engine",
    "Finding": "tenure.doctor.model",
    "Report": "tenure.doctor.model",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tenure.doctor' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)


__all__ = ["CannotRun", "Finding", "Report", "diagnose"]
