from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from web.helpers import WebProject


@pytest.fixture
def project(tmp_path: Path) -> Iterator[WebProject]:
    p = WebProject(tmp_path)
    yield p
    p.close()
