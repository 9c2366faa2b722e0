"""An image whose entrypoint picks web or worker by an environment variable (`case
"$LYCHEE_MODE" in worker)`), run by name from the published registry path and set to worker
mode by one Compose service. Cut from LycheeOrg/Lychee (Dockerfile and Dockerfile-legacy with
the same `LABEL org.opencontainers.image.source`, docker/scripts/entrypoint.sh, the
lychee_worker service of docker-compose.yaml). The image's CMD is the web server: the worker's
branch is the environment's to choose, not the CMD's first word."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, sites

LABELS = """FROM dunglas/frankenphp:php8.5-trixie
LABEL org.opencontainers.image.title="Lychee"
LABEL org.opencontainers.image.source="https://github.com/LycheeOrg/Lychee"
COPY docker/scripts/entrypoint.sh /usr/local/bin/entrypoint.sh
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
CMD ["php", "artisan", "octane:start", "--server=frankenphp"]
"""
ENTRYPOINT = """#!/bin/bash
LYCHEE_MODE=${LYCHEE_MODE:-web}
case "$LYCHEE_MODE" in
web)
  exec "$@"
  ;;
worker)
  while true; do
    run_as_www php artisan queue:work \\
      --tries=3 \\
      --timeout=3600 \\
      --sleep=3 || EXIT_CODE=$?
  done
  ;;
esac
"""
COMPOSE = """x-base-lychee-setup: &base-lychee-setup
  image: {image}
  restart: unless-stopped

services:
  lychee_api:
    <<: *base-lychee-setup
  lychee_worker:
    <<: *base-lychee-setup
    environment:
      LYCHEE_MODE: {mode}
"""
QUEUE = """<?php
return ['default' => env('QUEUE_CONNECTION', 'database'),
    'connections' => ['database' => ['driver' => 'database', 'retry_after' => 4000]]];
"""


@pytest.mark.parametrize(
    ("image", "mode", "expected"),
    [("ghcr.io/lycheeorg/lychee:latest", "worker", ["docker-compose.yaml:8"]),
     ("ghcr.io/lycheeorg/lychee:latest", "web", []),  # no service in worker mode: quiet twin
     ("ghcr.io/someone/lychee:latest", "worker", [])],  # another repository's image
)  # fmt: skip
def test_the_service_choosing_worker_mode_gets_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, mode: str, expected: list[str]
) -> None:
    files = {"config/queue.php": QUEUE,
             "Dockerfile": LABELS, "Dockerfile-legacy": LABELS.replace("8.5", "8.3"),
             "docker/scripts/entrypoint.sh": ENTRYPOINT,
             "docker-compose.yaml": COMPOSE.format(image=image, mode=mode)}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    assert sites(report, "laravel-grace-below-job-timeout") == expected
