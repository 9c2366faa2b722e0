"""An Amazon ECS container definition (here in a Pulumi stack config) runs the project's image,
whose CMD is an entry script that picks the worker by CONTAINER_ROLE; a workflow's `docker
build -t $ECR_TAG -f ./backend/Dockerfile ./backend` says which Dockerfile that image is. The
worker gets ECS's stopTimeout (30 s when unset) and the finding goes on the container. Cut from
a FastAPI + Celery app on Fargate (tasks bound to `task_default_queue`, set in
`config_from_object({...})`), whose Compose file is its local development stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose

APP = """from celery import Celery

celery = Celery('appointment')
celery.config_from_object({{
    'broker_url': 'redis://redis:6379/0',
    'task_default_queue': 'appointment',
    'accept_content': ['json'],
}})


@celery.task{limit}
def renew_google_channels():
    pass
"""
DOCKERFILE = """FROM python:3.12-slim
WORKDIR /app
COPY . .
CMD ["/bin/bash", "./scripts/entry.sh"]
"""
ENTRY = """#!/bin/bash
if [[ "$CONTAINER_ROLE" == "worker" ]]; then
    celery -A appointment.celery_app:celery worker -l INFO --beat -Q appointment
elif [[ "$CONTAINER_ROLE" == "flower" ]]; then
    celery -A appointment.celery_app:celery flower -l INFO
elif [[ "$CONTAINER_ROLE" == "api" ]]; then
    uvicorn --factory appointment.main:server --host 0.0.0.0 --port 5000
fi
"""
STACK = """---
.apmt_image: &APMT_IMAGE 1234.dkr.ecr.eu-central-1.amazonaws.com/thunderbird/appointment:c0a95e3
.app_env: &VAR_APP_ENV {{name: "APP_ENV", value: "prod"}}

.apmt_taskdef: &APMT_TASK_DEFINITION
  network_mode: awsvpc
  requires_compatibilities:
   - FARGATE

.apmt_contdef: &APMT_CONTAINER_DEFINITION
  image: *APMT_IMAGE
  essential: true
  linuxParameters:
    initProcessEnabled: True

resources:
  tb:fargate:AutoscalingFargateCluster:
    appointment:
      task_definitions:
        celery:
          <<: *APMT_TASK_DEFINITION
          family: appointment-prod-celery
          container_definitions:
            - <<: *APMT_CONTAINER_DEFINITION
              name: celery
{stop}              environment:
                - *VAR_APP_ENV
                - name: CONTAINER_ROLE
                  value: worker
        flower:
          <<: *APMT_TASK_DEFINITION
          container_definitions:
            - <<: *APMT_CONTAINER_DEFINITION
              name: flower
              environment:
                - name: CONTAINER_ROLE
                  value: flower
"""
WORKFLOW = """name: deploy-staging
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - name: Login to Amazon ECR
        id: login-ecr
        uses: aws-actions/amazon-ecr-login@v2
      - name: Build and push the backend image
        env:
          ECR_TAG: '{registry}/thunderbird/{name}:{sha}'
        run: |
          docker build --build-arg "RELEASE_VERSION=$RELEASE" -t $ECR_TAG {build}
          docker push $ECR_TAG
"""
COMPOSE = """services:
  backend: &backend
    build:
      context: ./backend
      dockerfile: ./Dockerfile
    volumes:
      - ./backend/src/appointment:/app/appointment
    environment:
      - CONTAINER_ROLE=api
      - IS_LOCAL_DEV=yes

  celery-worker:
    <<: *backend
    environment:
      - CONTAINER_ROLE=worker
"""
UNBOUNDED, GRACE = "celery-task-unbounded", "celery-grace-below-time-limit"
CELERY_LINE = 24  # `- <<: *APMT_CONTAINER_DEFINITION` of the celery container


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, stop: str = "", limit: str = "",
        image: str = "appointment") -> list[str]:  # fmt: skip
    write(tmp_path, {
        "backend/src/appointment/celery_app.py": APP.format(limit=limit),
        "backend/src/appointment/controller/calendar.py": "",
        "backend/Dockerfile": DOCKERFILE,
        "backend/scripts/entry.sh": ENTRY,
        "pulumi/config.prod.yaml": STACK.format(stop=stop),
        ".github/workflows/deploy-staging.yml": WORKFLOW.format(
            name=image, registry="${{ steps.login-ecr.outputs.registry }}",
            sha="${{ github.sha }}", build="./backend -f ./backend/Dockerfile"),
        "docker-compose.yml": COMPOSE,
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="backend/src/appointment/celery_app.py")
    return sorted(f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings
                  if f.rule in (UNBOUNDED, GRACE))  # fmt: skip


def test_ecs_container_running_the_image_gets_the_default_stop_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the flower container, nor the development Compose stack's celery-worker.
    assert run(tmp_path, monkeypatch) == [f"{UNBOUNDED} pulumi/config.prod.yaml:{CELERY_LINE}"]


def test_ecs_stop_timeout_past_the_task_limit_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, stop="              stopTimeout: 120\n",
                limit="(time_limit=60)")  # fmt: skip
    assert found == []


def test_ecs_default_stop_timeout_below_the_task_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch, limit="(time_limit=600)")
    assert found == [f"{GRACE} pulumi/config.prod.yaml:{CELERY_LINE}"]


def test_ecs_image_no_workflow_builds_is_not_tied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(tmp_path, monkeypatch, image="accounts") == []


def test_compose_worker_sharing_a_non_development_build_is_a_deployment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = run(tmp_path, monkeypatch)
    write(tmp_path, {"docker-compose.yml": COMPOSE.replace("      - IS_LOCAL_DEV=yes\n", "")})
    report = diagnose(None, ".", history=False, celery="backend/src/appointment/celery_app.py")
    compose = [f"{f.rule} {f.location.path}:{f.location.line}" for f in report.findings
               if f.location.path == "docker-compose.yml"]  # fmt: skip
    assert len(found) == 1 and compose == [f"{UNBOUNDED} docker-compose.yml:11"]
