"""Noticing that a SQLite store's file was deleted or replaced while a worker used it.

The worker's open connections keep the deleted file's inode alive, so without a look at the
path it would go on reserving from, and recording results into, a file nobody else can see,
while dispatchers create and fill a new one: work silently split in two.
"""

from __future__ import annotations

import os

# O_PATH: a handle that pins the inode (so a file re-created at the path cannot reuse its
# number) without opening the file for I/O. Closing it, unlike closing a real descriptor of
# the database, does not drop the process's POSIX locks, which SQLite relies on.
O_PATH: int | None = getattr(os, "O_PATH", None)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class StoreFile:
    """The file behind a SQLite store, as it was when the worker started."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None
        self._pin: int | None = None
        if path is None or O_PATH is None:  # not Linux: compare what the path names
            self._identity = _identity(path) if path else None
            return
        try:
            self._pin = os.open(path, O_PATH)
        except OSError:
            return
        st = os.fstat(self._pin)
        self._identity = st.st_dev, st.st_ino

    def close(self) -> None:
        if self._pin is not None:
            os.close(self._pin)
            self._pin = None

    def problem(self) -> str | None:
        """Why the store's file is no longer the one this worker opened, or None."""
        if self.path is None or self._identity is None:
            return None
        now = _identity(self.path)
        if now == self._identity:
            return None
        # (A deleted file is often re-created at once, empty, by the next connection to it.)
        state = "is missing" if now is None else "is another file now"
        return (
            f"the SQLite store file {self.path} was deleted or replaced while this worker used "
            f"it (the path {state}); jobs "
            "dispatched from now on are not in the file this worker reads. Restart the worker "
            "once the file is where it should be"
        )


def sqlite_path(store: object, url: str) -> str | None:
    """The file of a SQLite store (its `path`), None for other stores."""
    if not url.lower().startswith("sqlite:"):
        return None
    path = getattr(store, "path", None)
    return path if isinstance(path, str) else None


def store_label(app_label: str, url: str) -> str:
    """How the worker names its store: the masked URL, and for SQLite the file's absolute
    path, since a relative one depends on the directory the worker was started in."""
    if not url.lower().startswith("sqlite:"):
        return app_label
    from tenure.stores.sqlite import sqlite_path as path_of

    try:
        return f"{app_label} (file {os.path.abspath(path_of(url))})"
    except ValueError:  # the store itself reports a bad SQLite URL when it opens
        return app_label
