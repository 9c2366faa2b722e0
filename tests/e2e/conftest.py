from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.helpers import Project


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """A jobs module on a fresh SQLite store; every worker it started is killed afterwards."""
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'tenure.db'}")
    yield p
    p.stop_all()
