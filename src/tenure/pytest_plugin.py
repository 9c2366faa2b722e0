"""pytest plugin (loaded automatically when tenure is installed): isolated tenure fixtures.

- `tenure_app`: your app (from the `tenure_app` ini option, e.g. `tenure_app = shop.jobs:app`)
  pointed at a fresh SQLite store in the test's tmp_path; without the option, a new empty App.
- `tenure_clock`: the store's clock of `tenure_app`, frozen; `tenure_clock.advance(30)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.app import App
from tenure.testing import FrozenClock, freeze, isolate


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("tenure_app", "MODULE:ATTR of the tenure.App the tenure_app fixture isolates")


@pytest.fixture
def tenure_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    spec = request.config.getini("tenure_app")
    if spec:
        from tenure.loading import load_app

        app = load_app(str(spec))
    else:
        app = App(f"sqlite:///{tmp_path / 'tenure-app.db'}")
    with isolate(app, tmp_path):
        yield app


@pytest.fixture
def tenure_clock(tenure_app: App) -> FrozenClock:
    return freeze(tenure_app)
