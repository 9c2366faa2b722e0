"""A worker run as an s6-overlay service of the image: the `run` file is copied in with the
image's root folder and started by the image's `/init`, so the Compose service running the
image gives it its grace. The layout is cut from LL0rd/fetcharr (Dockerfile: `COPY
docker/root/ /`, `ENTRYPOINT ["/init"]`; docker/root/etc/s6-overlay/s6-rc.d/worker/run:
`exec s6-setuidgid abc ...`), with the worker's program a Celery worker. Twins: the service
waits longer than the time limit; the image does not copy the folder in."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = "CELERY_BROKER_URL = 'redis://redis:6379/0'\nCELERY_TASK_TIME_LIMIT = 600\n"
DOCKERFILE = """FROM python:3.12-slim
COPY --from=build /prod/ /app/
{copy}RUN chmod +x /etc/s6-overlay/s6-rc.d/web/run \\
  /etc/s6-overlay/s6-rc.d/worker/run

ENV S6_BEHAVIOUR_IF_STAGE2_FAILS=2 \\
  S6_SERVICES_GRACETIME=30000

HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \\
  CMD curl -fsS http://localhost:3000/api/health || exit 1

ENTRYPOINT ["/init"]
"""
RUN = """#!/command/with-contenv sh
umask "${UMASK:-022}"
exec s6-setuidgid abc celery -A fetcharr worker -l info
"""
COMPOSE = """services:
  fetcharr:
    build: .
{grace}    restart: unless-stopped
"""
WORKER = "docker/root/etc/s6-overlay/s6-rc.d/worker/run"


def findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str = "", copy: bool = True
) -> list[str]:
    files = {"settings.py": SETTINGS, WORKER: RUN,
             "Dockerfile": DOCKERFILE.replace("{copy}", "COPY docker/root/ /\n" if copy else ""),
             "docker-compose.yml": COMPOSE.replace("{grace}", grace)}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False, celery="settings.py")
    return located(report, "celery-grace-below-time-limit")


def test_an_s6_service_gets_the_grace_of_the_container_running_its_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = findings(tmp_path, monkeypatch)
    assert found.startswith("celery-grace-below-time-limit docker-compose.yml:2 ")
    assert "run by Compose service fetcharr" in found and "10 s after SIGTERM" in found


def test_quiet_twin_the_service_waits_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert findings(tmp_path, monkeypatch, grace="    stop_grace_period: 11m\n") == []


def test_quiet_twin_an_image_that_does_not_copy_the_service_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert findings(tmp_path, monkeypatch, copy=False) == []
