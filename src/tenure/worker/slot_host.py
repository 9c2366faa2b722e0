"""What a worker's slot needs of the worker it belongs to: the supervisor's Worker is the one
host (see slot.py for the slot, supervisor.py for the worker)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Protocol, TypeVar

from tenure.app import App
from tenure.core.records import Reservation
from tenure.settings import WorkerOptions
from tenure.worker.execute import Ended
from tenure.worker.metrics import Metrics
from tenure.worker.shutdown import Shutdown

# The slot, which hands itself back when freed: a parameter, so this module needs no import
# of slot.py (which imports this one).
SlotT = TypeVar("SlotT", contravariant=True)


class SlotHost(Protocol[SlotT]):
    """What a slot needs of the worker it belongs to (the supervisor's Worker)."""

    app: App
    options: WorkerOptions
    needs_children: bool
    metrics: Metrics
    shutdown: Shutdown
    hard_stop: threading.Event

    @property
    def where(self) -> str: ...

    def child_config(self) -> dict[str, Any]: ...

    def may_chain(self) -> bool: ...

    def unknown_job(self, res: Reservation) -> Ended: ...

    def keep_memory_reading(self, res: Reservation, mb: float) -> None: ...

    def count_start(self) -> None: ...

    def attempt_recorded(self, name: str, outcome: str, duration: float) -> None: ...

    def report(
        self, res: Reservation, ended: Ended, duration: float, *, chain: bool = False
    ) -> Reservation | None: ...

    def slot_freed(self, slot: SlotT) -> None: ...

    def event_loop(self) -> asyncio.AbstractEventLoop: ...
