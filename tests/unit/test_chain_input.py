"""`app.chain` refuses what is not a signature before anything is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tenure
from tenure.core.errors import ConfigError


def test_a_link_that_is_not_a_signature_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    app = tenure.App(f"sqlite:///{tmp_path / 'c.db'}")

    @app.job
    def fetch(n: int) -> int:
        return n

    bad: list[tuple[list[Any], dict[str, Any], str]] = [
        ([fetch.sig(1), "x"], {}, "for link 2, got 'x'"),
        ([fetch.sig(1), fetch], {}, "did you mean fetch.sig(...)?"),
        ([None], {}, "for link 1, got None"),
        ([fetch.sig(1)], {"catch": fetch}, "for catch, got <tenure job"),
        ([fetch.sig(1)], {"finally_": 3}, "for finally_, got 3"),
    ]
    for sigs, options, said in bad:
        with pytest.raises(ConfigError) as refused:
            app.chain(sigs, **options)
        assert said in str(refused.value)
    assert sum(app.counts().values()) == 0  # nothing of a refused chain was stored
    app.close()
