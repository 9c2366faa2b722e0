"""The worker's options, as the `tenure worker` command line gives them, and their checks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerOptions:
    app_spec: str
    queues: tuple[str, ...] = ("default",)
    concurrency: int = 1
    lease: float = 30.0
    grace: float = 8.0
    max_jobs: int | None = None
    max_time: float | None = None
    memory_mb: float | None = None
    burst: bool = False
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"

    def problems(self) -> list[str]:
        out = []
        if self.concurrency < 1:
            out.append(f"--concurrency: expected >= 1, got {self.concurrency}")
        if self.lease < 1:
            out.append(f"--lease: expected seconds >= 1, got {self.lease:g}")
        if self.grace < 0:
            out.append(f"--grace: expected seconds >= 0, got {self.grace:g}")
        if not self.queues or any(not q for q in self.queues):
            out.append(f"--queues: expected names separated by commas, got {self.queues!r}")
        if self.memory_mb is not None and self.memory_mb <= 0:
            out.append(f"--memory: expected MB > 0, got {self.memory_mb:g}")
        return out
