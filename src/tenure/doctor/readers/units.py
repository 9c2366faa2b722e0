"""Durations, memory sizes and signal names as each platform writes them.

Every parser returns None for "cannot tell" and raises nothing: a value the doctor cannot read
becomes an unknown clock, never a crash and never a guess.
"""

from __future__ import annotations

import re

UNBOUNDED = float("inf")

_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")

_SYSTEMD_UNITS = {
    "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "week": 604800.0, "weeks": 604800.0,
}  # fmt: skip
_SYSTEMD_PART = re.compile(r"(\d+(?:\.\d*)?)\s*([a-z]*)")

_MB = 1024.0 * 1024.0
_MEMORY_UNITS = {
    "": 1.0, "b": 1.0,
    "k": 1024.0, "kb": 1024.0, "ki": 1024.0, "kib": 1024.0,
    "m": _MB, "mb": _MB, "mi": _MB, "mib": _MB,
    "g": _MB * 1024, "gb": _MB * 1024, "gi": _MB * 1024, "gib": _MB * 1024,
    "t": _MB * 1024**2, "tb": _MB * 1024**2, "ti": _MB * 1024**2, "tib": _MB * 1024**2,
}  # fmt: skip
# Kubernetes quantities: an uppercase decimal suffix means powers of 1000, "Mi" powers of 1024.
_K8S_DECIMAL = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_K8S_BINARY = {"Ki": 1024.0, "Mi": _MB, "Gi": _MB * 1024, "Ti": _MB * 1024**2}


def go_duration(value: object) -> float | None:
    """Compose durations: "1m30s", "10s", "500ms"; a bare number counts as seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = _GO_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def systemd_timespan(value: str) -> float | None:
    """systemd time spans: "90", "90s", "1min 30s", "5m"; "infinity" is UNBOUNDED."""
    text = value.strip().lower()
    if text == "infinity":
        return UNBOUNDED
    parts = _SYSTEMD_PART.findall(text)
    rebuilt = re.sub(r"\s+", "", text)
    if not parts or "".join(n + u for n, u in parts) != rebuilt:
        return None
    total = 0.0
    for number, unit in parts:
        factor = _SYSTEMD_UNITS.get(unit or "s")
        if factor is None:
            return None
        total += float(number) * factor
    return total


def seconds(value: object) -> float | None:
    """A plain number of seconds (supervisord, Kubernetes, command-line options)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def memory_mb(value: object) -> float | None:
    """Compose and systemd sizes ("512m", "1g", "1073741824", "2G") in MB (MiB)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) / _MB
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
    if not match:
        return None
    factor = _MEMORY_UNITS.get(match.group(2).lower())
    return None if factor is None else float(match.group(1)) * factor / _MB


def k8s_memory_mb(value: object) -> float | None:
    """Kubernetes quantities: "512Mi", "1Gi", "500M", "1e9", "128974848"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) / _MB
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:[eE]\d+)?)\s*([a-zA-Z]*)\s*", value)
    if not match:
        return None
    number, suffix = float(match.group(1)), match.group(2)
    if suffix in _K8S_BINARY:
        return number * _K8S_BINARY[suffix] / _MB
    if suffix in _K8S_DECIMAL:
        return number * _K8S_DECIMAL[suffix] / _MB
    return number / _MB if suffix == "" else None


def signal_name(value: object) -> str | None:
    """ "SIGTERM", "TERM", "15" and "term" all become "SIGTERM"."""
    numbers = {"1": "SIGHUP", "2": "SIGINT", "3": "SIGQUIT", "9": "SIGKILL", "15": "SIGTERM"}
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().upper()
    if text in numbers:
        return numbers[text]
    return text if text.startswith("SIG") else "SIG" + text
