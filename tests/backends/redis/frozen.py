"""Stores of an older key layout, for the upgrade tests: this code's Python over the scripts
that layout's release shipped, frozen in layoutN/lua (a copy of src/tenure/stores/redis/lua
as it was), run by EVALSHA as on Redis 6.2, on keys marked with that layout. Layout 2, whose
enqueue groups differ, has its own (test_upgrade.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenure.stores.redis import RedisStore
from tenure.stores.redis import scripts as current
from tenure.stores.redis.database import RedisDatabase

HERE = Path(__file__).parent


def older_args(script: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """This code's arguments of a queue script as layouts 2-4's scripts took them:
    complete_and_reserve was sent the claim's limit (1) and always a result ('-': none);
    enqueue_plain's groups were whole, with delay before the keeps."""
    if script == "complete_and_reserve":
        job_id, token, lease, wid, host, pid, *result = args
        return (job_id, token, 1, lease, wid, host, pid, *(result or ["-"]))
    if script == "enqueue_plain":
        out: list[Any] = []
        for i in range(0, len(args), current.PLAIN_FIELDS):
            group = [*args[i : i + current.PLAIN_FIELDS], "0", "0"][: current.PLAIN_FIELDS]
            job_id, name, payload, policy, keep_s, keep_f, delay, priority = group
            out += [job_id, name, payload, policy, delay, keep_s, keep_f, priority]
        return tuple(out)
    return args


def frozen_scripts(root: Path, kind: str, libs: tuple[str, ...], *, wrap: bool) -> dict[str, str]:
    """The scripts under `root` as that release's scripts.py built them for EVALSHA."""

    def read(relative: str) -> str:
        text = (root / relative).read_text("utf-8")
        return current.INCLUDE.sub(lambda m: read(m.group(1)), text)

    prelude = "".join(read(lib) for lib in libs)
    out = {}
    for path in sorted((root / kind).glob("*.lua")):
        body = read(f"{kind}/{path.name}")
        if wrap:
            body = f"local function body()\n{body}\nend\nreturn with_lost_callbacks(body())\n"
        used = current._used(body, prelude)
        enqueues = current.ENQUEUE_WORDS.search(used + body) is not None
        constants = current.CONSTANTS + (current.ENQUEUE_CONSTANTS if enqueues else "")
        out[path.stem] = constants + used + body
    return out


class FrozenDatabase(RedisDatabase):
    """This code's database over layout `layout`'s frozen scripts; `older_calls`: those
    scripts take the arguments older_args makes."""

    layout = 0
    older_calls = False

    def __init__(self, url: str) -> None:
        super().__init__(url)
        root = HERE / f"layout{self.layout}" / "lua"
        queue = frozen_scripts(root, "queue", current.QUEUE_LIBS, wrap=True)
        store_wide = frozen_scripts(root, "global", current.GLOBAL_LIBS, wrap=False)
        self.q = {name: self.client.register_script(text) for name, text in queue.items()}
        self.g = {name: self.client.register_script(text) for name, text in store_wide.items()}

    def qcall(self, script: str, queue: str, *args: Any) -> Any:
        if self.older_calls:
            args = older_args(script, args)
        return super().qcall(script, queue, *args)

    def check_layout(self) -> None:
        self.client.hsetnx(self.global_key("meta"), "layout", str(self.layout))
        self._functions = {}
        self._layout_checked = True


class FrozenStore(RedisStore):
    """This code's Python over an older layout's keys and scripts (`database`)."""

    database: type[FrozenDatabase] = FrozenDatabase

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.db.close()
        self.db = self.database(url)
