from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tenure.web import create_app
from web.helpers import WebProject


@pytest.fixture
def project(tmp_path: Path) -> Iterator[WebProject]:
    p = WebProject(tmp_path)
    yield p
    p.close()


@pytest.fixture
def client(project: WebProject) -> Iterator[TestClient]:
    """The project's dashboard, in process, reached as from the machine it runs on."""
    web = create_app(project.app, app_spec=project.spec, project_root=str(project.dir))
    with TestClient(web, base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000)) as c:
        yield c


def csrf_of(client: TestClient) -> str:
    """The CSRF token the dashboard's first page sets, which its forms send back."""
    client.get("/")
    token = client.cookies.get("tenure_csrf")
    assert token
    return str(token)
