"""Knowing, without a stat, that nothing can have moved the store's file since the last stat.

checked_conn proves before each write transaction that the path still names the file the
connection opened (a connection to a deleted file writes into an orphaned inode). That proof
is a stat of the path: some 4 µs of Python a job on the worker's hot path (os.stat builds a
result of twenty fields). The path can only come to name another file through a change to an
entry of one of the directories on it (the file deleted, renamed or replaced; a directory on
the way renamed, replaced or deleted) or through a mount. So, on Linux, inotify watches every
directory on the path for those changes and /proc/self/mountinfo is polled for mounts: while
neither has said anything since a stat proved the file its own, the file is still its own,
and one poll(0) (under 1 µs) replaces the stat. Anything said about a name on the path costs a
stat as before; news of a neighbour (the -wal, another file in the directory) is read and
set aside.

Where the kernel cannot be trusted to say everything, there is no watch and every check is a
stat as before: a path through a symbolic link (the link's target can change in directories
not on the path), a file system not known to be local (NFS and the like change on another
host, which inotify never hears of), no inotify (not Linux) or none left (its limits).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import threading
import weakref
from typing import Any

# inotify(7): the changes to a directory's entries, and to the directory itself
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
# said of a watched directory itself, or of the whole watch: the watch no longer covers the path
BROKEN = IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW | IN_IGNORED
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
DIRECTORY_CHANGES = (
    IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
)
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, getattr(os, "O_CLOEXEC", 0)
# File systems whose every change passes through this kernel (so inotify hears of it).
LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "overlay", "jfs", "reiserfs"}
)
MOUNTINFO = "/proc/self/mountinfo"


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 (absent off Linux: AttributeError)
    except (OSError, AttributeError):
        return None
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


LIBC = _libc()


class FileWatch:
    """The directories on one file's path, watched. `generation()` moves on whenever
    something was said; a stat that proved the file its own at generation g stays valid for
    as long as generation() returns g."""

    broken = False  # a directory on the path moved: the Database builds a new watch

    def __init__(self, inotify: int, mounts: int) -> None:
        self._inotify, self._mounts = inotify, mounts
        self._poll = select.poll()
        self._poll.register(inotify, select.POLLIN)
        self._poll.register(mounts, select.POLLPRI)  # mountinfo: POLLPRI|POLLERR on a mount
        # One thread at a time asks: a poll object refuses concurrent calls, and a poll of
        # mountinfo consumes its news, so the poll and the generation it moves are one step
        # (another thread must not poll in between, find nothing, and read the old number).
        self._lock = threading.Lock()
        self._generation = 0
        self.steps: dict[int, bytes] = {}  # a directory's watch -> its entry on the path
        self.leaf = -1  # the watch of the file's own directory (its entry: the file's name)
        # Closed once, by close() or when dropped: a descriptor closed twice could be another's.
        self.close = weakref.finalize(self, _close, inotify, mounts)

    def generation(self) -> int:
        with self._lock:
            said = self._poll.poll(0)
            if said:
                mounted = any(fd == self._mounts for fd, _ in said)
                self.broken = self.broken or mounted  # build the watch on what the path is now
                if self._drain() or mounted:
                    self._generation += 1
            return self._generation

    def _drain(self) -> bool:
        """Whether any of the events read could have changed what the path names."""
        moved = False
        try:
            while True:
                moved = self._read(os.read(self._inotify, 65536)) or moved
        except BlockingIOError:
            pass
        return moved

    def _read(self, data: bytes) -> bool:
        """Only an entry named on the path can change what it names: the file's own name in
        its directory (a stat tells), a directory's name in its parent, a directory on the
        path moved or deleted, or lost events (all three break the watch: it watches the old
        directory, or may have missed one). A neighbour (the -wal, another file) tells none."""
        moved = False
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, _cookie, size = EVENT.unpack_from(data, at)
            name = data[at + EVENT.size : at + EVENT.size + size].rstrip(b"\0")
            at += EVENT.size + size
            step = self.steps.get(wd)
            if mask & BROKEN or step is None or (name == step and wd != self.leaf):
                self.broken = moved = True
            elif name == step:
                moved = True
        return moved


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def watch(path: str) -> FileWatch | None:
    """A watch of the directories on `path`, or None where a stat per check must do."""
    if LIBC is None:
        return None
    where = os.path.abspath(path)
    if os.path.realpath(where) != where or not _local(where):
        return None
    inotify = LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if inotify < 0:
        return None  # out of inotify instances: stat as before
    try:
        mounts = os.open(MOUNTINFO, os.O_RDONLY | IN_CLOEXEC)
    except OSError:
        os.close(inotify)
        return None
    made = FileWatch(inotify, mounts)
    made._poll.poll(0)  # mountinfo may say "changed" to a fresh reader once: take it now
    # From the root down: a directory replaced after its parent is watched is heard of there.
    folders = _folders(os.path.dirname(where))
    steps = [*(os.path.basename(f) for f in folders[1:]), os.path.basename(where)]
    for folder, step in zip(folders, steps, strict=True):
        wd = LIBC.inotify_add_watch(inotify, os.fsencode(folder), DIRECTORY_CHANGES)
        if wd < 0 or wd in made.steps:  # (the same directory twice: a bind mount on the path)
            made.close()
            return None  # out of watches, or the directory is gone: stat as before
        made.steps[wd], made.leaf = os.fsencode(step), wd
    return made


def _folders(folder: str) -> list[str]:
    """`folder` and each directory above it, the root first."""
    chain = [folder]
    while os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    return chain[::-1]


def _local(path: str) -> bool:
    """Whether the file system `path` is on is one this kernel sees every change to."""
    best, kind = "", ""
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                fields = line.split()
                point = fields[4].replace("\\040", " ")
                fstype = fields[fields.index("-") + 1]
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fstype
    except (OSError, ValueError, IndexError):
        return False
    return kind in LOCAL_FILE_SYSTEMS
