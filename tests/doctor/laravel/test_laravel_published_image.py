"""A Compose service that runs the project's published image (`image: owner/app:latest`, built
by a GitHub Actions workflow, not by Compose) runs the worker that image starts: its stop grace
is the worker's."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import laravel_project, located, write
from tenure.doctor.workflows import published_images

QUEUE = """<?php

return [
    'default' => env('QUEUE_CONNECTION', 'redis'),
    'connections' => [
        'redis' => ['driver' => 'redis', 'queue' => 'default', 'retry_after' => 1000],
    ],
];
"""
# Cut from unopim/unopim (compose.yaml, dockerfiles/q.Dockerfile, dockerfiles/q-entrypoint.sh,
# .github/workflows/docker-publish.yml): the queue image is pushed by a workflow whose tags a
# `run:` step computes; compose.yaml runs it by name with Compose's 10 s grace.
UNOPIM = {
    "dockerfiles/q.Dockerfile": """FROM php:8.3-cli
COPY dockerfiles/q-entrypoint.sh /var/www/html/dockerfiles/q-entrypoint.sh
ENTRYPOINT ["/var/www/html/dockerfiles/q-entrypoint.sh"]
""",
    "dockerfiles/q-entrypoint.sh": """#!/bin/sh
set -e
exec php artisan queue:work --queue=default --timeout=900 --tries=1
""",
    ".github/workflows/docker-publish.yml": """name: Publish
on: {push: {tags: ['v*']}}
jobs:
  publish:
    runs-on: ubuntu-latest
    steps:
      - name: Compute Queue Image Tags
        id: queue_tags
        run: |
          TAGS="webkul/unopim-queue:${{ github.ref_name }}"
          TAGS="$TAGS,webkul/unopim-queue:latest"
          echo "tags=$TAGS" >> "$GITHUB_OUTPUT"
      - name: Build and push queue worker image
        uses: docker/build-push-action@v7
        with:
          context: .
          file: dockerfiles/q.Dockerfile
          push: true
          tags: ${{ steps.queue_tags.outputs.tags }}
""",
    "compose.yaml": """services:
  unopim-queue:
    image: webkul/unopim-queue:${{UNOPIM_TAG:-latest}}
    restart: unless-stopped
{grace}""",
}
# Cut from coollabsio/coolify (docker/production/Dockerfile, its s6 horizon service,
# docker-compose.prod.yml, .github/workflows/coolify-release.yml): the last stage sets no
# process of its own (serversideup/php's s6-overlay /init starts the copied services), the
# registry is a variable, and the workflow names the image through its env.
COOLIFY = {
    "docker/production/Dockerfile": """FROM serversideup/php:8.4-fpm-nginx-alpine
COPY --chmod=755 docker/production/etc/s6-overlay/ /etc/s6-overlay/
""",
    "docker/production/etc/s6-overlay/s6-rc.d/queue/run": """#!/bin/sh
cd /var/www/html
exec php artisan queue:work --timeout=900
""",
    ".github/workflows/release.yml": """name: Release
env:
  GITHUB_REGISTRY: ghcr.io
  IMAGE_NAME: coollabsio/coolify
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: docker/build-push-action@v6
        with:
          context: .
          file: docker/production/Dockerfile
          tags: |
            ${{ env.GITHUB_REGISTRY }}/${{ env.IMAGE_NAME }}:${{ github.sha }}
""",
    "docker-compose.prod.yml": """services:
  coolify:
    image: "${{REGISTRY_URL:-docker.io}}/coollabsio/coolify:${{LATEST_IMAGE:-latest}}"
{grace}""",
}


def run(tmp_path: Path, layout: dict[str, str], grace: str, monkeypatch: pytest.MonkeyPatch
        ) -> list[str]:  # fmt: skip
    files = {"config/queue.php": QUEUE}
    files |= {path: text.format(grace=grace) if path.startswith(("compose", "docker-compose"))
              else text for path, text in layout.items()}  # fmt: skip
    report = laravel_project(tmp_path, files, monkeypatch)
    return located(report, "laravel-grace-below-job-timeout")


def test_a_workflow_names_the_dockerfile_behind_a_published_image(tmp_path: Path) -> None:
    write(tmp_path, UNOPIM | COOLIFY)
    assert published_images(str(tmp_path)) == {
        "webkul/unopim-queue": "dockerfiles/q.Dockerfile",
        "coollabsio/coolify": "docker/production/Dockerfile",
    }


@pytest.mark.parametrize(("layout", "where"), [(UNOPIM, "compose.yaml:2"),
                                               (COOLIFY, "docker-compose.prod.yml:2")])  # fmt: skip
def test_service_running_the_published_image_gives_its_worker_its_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict[str, str], where: str
) -> None:
    (found,) = run(tmp_path, layout, "", monkeypatch)
    assert found.startswith(f"laravel-grace-below-job-timeout {where} ")


@pytest.mark.parametrize("layout", [UNOPIM, COOLIFY])
def test_quiet_when_the_service_waits_past_the_worker_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict[str, str]
) -> None:
    assert run(tmp_path, layout, "    stop_grace_period: 20m\n", monkeypatch) == []


def test_s6_services_copied_into_an_image_with_its_own_process_are_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `CMD ["php-fpm"]` replaces the base image's /init: nothing starts the copied services.
    own = COOLIFY | {"docker/production/Dockerfile": COOLIFY["docker/production/Dockerfile"]
                     + 'CMD ["php-fpm"]\n'}  # fmt: skip
    assert run(tmp_path, own, "", monkeypatch) == []
