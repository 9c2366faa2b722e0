"""A stand-in for the requests package so fixture apps import without it installed."""

from typing import Any


def __getattr__(name: str) -> Any:
    return lambda *args, **kwargs: None
