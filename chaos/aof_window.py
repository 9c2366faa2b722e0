"""The lost-write window of Redis with `appendonly yes`, `appendfsync everysec`, measured.

A writer runs one Lua script per write (as tenure does: each script is one MULTI/EXEC block
in the AOF), INCR on one key, as fast as one connection goes, and notes the value and moment
of every acknowledged reply. At a random moment redis-server gets SIGKILL; it is started again
on the same directory and the value it reloaded is compared with the last acknowledged one.
Lost writes are acknowledged values above the reloaded one; the window is the time from the
first lost acknowledgement to the kill.

What this measures is a killed *process* (crash, OOM kill, `kill -9`): Redis writes the AOF
buffer to the file before it replies, so the kernel holds every acknowledged write. A lost
*machine* (power, kernel panic) also loses what the kernel had not yet fsynced, up to the last
second (two when an fsync stalls); that needs a machine to crash and is not measured here.
"""

from __future__ import annotations

import random
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from chaos.harness import ROOT

SCRIPT = "return redis.call('INCR', KEYS[1])"
KEY = "aof-window:{g}:writes"


@dataclass
class Trial:
    acknowledged: int
    reloaded: int
    lost: int
    window_ms: float
    writes_per_s: float


def servers_module() -> Any:
    tests_dir = str(ROOT / "tests")
    if tests_dir not in sys.path:
        sys.path.insert(0, tests_dir)
    import servers

    return servers


def one_trial(rng: random.Random, *, appendonly: bool = True) -> Trial:
    """One kill; `appendonly=False` is the control: no persistence, so every write is lost,
    which shows the instrument sees losses when there are some."""
    import redis

    servers = servers_module()
    server = servers.ThrowawayRedis(appendonly=appendonly)
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        # ThrowawayRedis fsyncs always (the tests' durable server); this measures everysec.
        client.config_set("appendfsync", "everysec")
        script = client.register_script(SCRIPT)
        acks: list[tuple[int, float]] = []
        stop = threading.Event()

        def write() -> None:
            while not stop.is_set():
                try:
                    value = int(script(keys=[KEY]))
                except redis.RedisError:
                    return
                acks.append((value, time.monotonic()))

        writer = threading.Thread(target=write, daemon=True)
        started = time.monotonic()
        writer.start()
        time.sleep(rng.uniform(1.0, 3.0))
        killed_at = time.monotonic()
        assert server.proc is not None
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=15)
        server.proc = None
        stop.set()
        writer.join(timeout=15)
        client.close()
        server.start()
        reloaded = read_after_loading(server.url)
        acknowledged = acks[-1][0] if acks else 0
        lost = [at for value, at in acks if value > reloaded]
        return Trial(
            acknowledged=acknowledged,
            reloaded=reloaded,
            lost=len(lost),
            window_ms=(killed_at - lost[0]) * 1000 if lost else 0.0,
            writes_per_s=len(acks) / max(1e-9, killed_at - started),
        )
    finally:
        server.close()


def read_after_loading(url: str) -> int:
    import redis

    reader = redis.Redis.from_url(url)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                return int(reader.get(KEY) or 0)
            except redis.BusyLoadingError:  # still replaying the AOF
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    finally:
        reader.close()


def measure(trials: int = 10, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    results = [one_trial(rng) for _ in range(trials)]
    windows = [t.window_ms for t in results]
    control = one_trial(rng, appendonly=False)
    return {
        "scenario": "aof-everysec-window",
        "trials": trials,
        "writes_per_s_median": round(statistics.median(t.writes_per_s for t in results)),
        "lost_writes_total": sum(t.lost for t in results),
        "lost_writes_max": max(t.lost for t in results),
        "window_ms_max": round(max(windows), 1),
        "window_ms_median": round(statistics.median(windows), 1),
        "control_no_persistence_lost": control.lost,
        "control_no_persistence_acknowledged": control.acknowledged,
        "trials_detail": [t.__dict__ for t in results],
    }
