"""Dockerfiles: what they copy into the image and the ENV they set (cut from real layouts)."""

from __future__ import annotations

from pathlib import Path

from tenure.doctor.dockerfile import copied_files, copied_sources, env_settings, instructions
from tenure.doctor.walk import scan

from conftest import write

PTERODACTYL = """FROM php:8.2-fpm-alpine
COPY . ./
COPY --from=0 /app/public/assets ./public/assets
RUN apk add --no-cache supervisor \\
    && cp .env.example .env
# COPY commented/out.conf /etc/out.conf
COPY .github/docker/supervisord.conf /etc/supervisord.conf
ADD https://example.invalid/x.tar.gz /tmp/
COPY --chown=www-data:www-data docker/startup.sh docker/supervisord.conf /
"""


def test_instructions_join_continuations_and_drop_comments() -> None:
    lines = instructions(PTERODACTYL)
    assert (4, "RUN", "apk add --no-cache supervisor && cp .env.example .env") in lines
    assert not any("commented" in rest for _, _, rest in lines)


def test_copied_sources_are_local_files_only() -> None:
    assert copied_sources(PTERODACTYL) == [
        ".",
        ".github/docker/supervisord.conf",
        "docker/startup.sh",
        "docker/supervisord.conf",
    ]


def test_copied_files_resolve_against_the_project(tmp_path: Path) -> None:
    files = {".github/docker/supervisord.conf": "[program:x]\n",
             "docker/supervisord.conf": "[program:y]\n", "Dockerfile": PTERODACTYL}  # fmt: skip
    write(tmp_path, files)
    found = copied_files(str(tmp_path), str(tmp_path / "Dockerfile"), PTERODACTYL)
    assert found == [
        str(tmp_path / ".github/docker/supervisord.conf"),
        str(tmp_path / "docker/supervisord.conf"),
    ]


def test_scan_takes_files_copied_from_hidden_folders(tmp_path: Path) -> None:
    files = {".github/docker/supervisord.conf": "[program:x]\n",
             ".github/docker/unused.conf": "[program:y]\n", "Dockerfile": PTERODACTYL}  # fmt: skip
    write(tmp_path, files)
    rels = [f.rel for f in scan(str(tmp_path)).files["supervisord"]]
    assert rels == [".github/docker/supervisord.conf"]  # the copied one, not its neighbour


def test_env_settings_both_forms() -> None:
    text = (
        "FROM python:3.12\nENV QUEUE_CONNECTION=redis \\\n    APP_ENV=production\n"
        "ENV OLD style value\n"
    )
    found = [(e.key, e.value, e.source.line) for e in env_settings("Dockerfile", text)]
    assert found == [
        ("QUEUE_CONNECTION", "redis", 2),
        ("APP_ENV", "production", 2),
        ("OLD", "style value", 4),
    ]


def test_development_names_are_files_and_folders_named_so() -> None:
    from tenure.doctor.walk import is_development_name

    assert is_development_name(".ci/.env.ci") and is_development_name("docker-compose.dev.yml")
    assert is_development_name("dev/docker/entrypoint.app.sh")
    assert is_development_name(".env.testing-ci") and is_development_name(".env.dusk.example")
    assert not is_development_name("docker/rootfs/usr/local/bin/run_worker.sh")
    assert not is_development_name("docker/.env.production")
    assert not is_development_name("deploy/devops/docker-compose.yml")


def test_templates_for_other_projects_are_not_deployments(tmp_path: Path) -> None:
    """Cut from Baserow's plugin-boilerplate/{{ cookiecutter.project_slug }}/ and a catalogue
    of other applications' Compose files under templates/; a Helm chart's templates stay."""
    from tenure.doctor.laravel.deploy import find_artisan, read_workers

    compose = "services:\n  worker:\n    command: php artisan queue:work --timeout=60\n"
    files = {
        "plugin-boilerplate/{{ cookiecutter.project_slug }}/docker-compose.yml": compose,
        "templates/compose/some-other-app.yaml": compose,
        "deploy/docker-compose.yml": compose,
    }
    write(tmp_path, files)
    tree = scan(str(tmp_path))
    workers, _ = read_workers(tree, [], find=find_artisan)
    assert [w.source.path for w in workers] == ["deploy/docker-compose.yml"]
    assert any("template for other projects" in s.reason for s in tree.skipped)
