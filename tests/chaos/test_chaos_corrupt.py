"""Corrupted rows written straight into the store among ordinary jobs, with a worker killed
mid-run: no worker may crash and every ordinary job must still succeed."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import corrupt
from chaos.harness import drop_store, skip_or_fail, store_url, store_works
from chaos.scenarios import run_one

pytestmark = pytest.mark.slow

# Every kind of damage the suite writes. Two used to block other jobs (a stray attempt row
# failed every reservation of its queue; a policy of the wrong types stopped every rescue);
# both are fixed, and this list is what keeps them fixed.
HARMLESS = list(corrupt.CORRUPTIONS)


def usable(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        return
    url = store_url(backend, tmp_path)
    why = store_works(url)
    drop_store(url)
    if why is not None:
        skip_or_fail(f"{backend} store not usable through tenure.App: {why}")


def run(backend: str, kinds: list[str], tmp_path: Path, **extra: object) -> dict[str, object]:
    params = {"jobs": 40, "kinds": kinds, "kill_every_s": 2.5, "settle_s": 20.0, **extra}
    return run_one("corrupt-rows", backend, params, keep=tmp_path).row()


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_damaged_rows_do_not_hurt_other_jobs(backend: str, tmp_path: Path) -> None:
    usable(backend, tmp_path)
    row = run(backend, HARMLESS, tmp_path)
    detail = {k: row[k] for k in ("notes", "problems", "examples")}
    assert row["lost"] == 0, detail
    assert not row["problems"], detail
    assert row["unexplained_duplicates"] == 0, detail
