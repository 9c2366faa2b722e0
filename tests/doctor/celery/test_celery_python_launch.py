"""Workers started from the project's own Python, tied to the unit that runs the command.
The console-script layout is cut from chaoss/augur: pyproject `[project.scripts] augur =
"augur.application.cli._multicommand:run"`, a click group loading each sub-command from a module
of its folder (cli/backend.py), whose `start` Popen-starts `celery -A ... worker` f-strings split
on spaces; the Compose service builds `./docker/backend/${AUGUR_TARGET:-Dockerfile}`, whose CMD
script execs `augur backend start`. The other forms (`app.worker_main([...])`,
`app.Worker(...).start()`, `os.system(...)`) are the ones Celery's own docs and scripts use."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

SETTINGS = """from celery import Celery
celery_app = Celery("proj", broker="amqp://guest@rabbitmq//")
{limit}
@celery_app.task
def collect(repo):
    return repo
"""
PYPROJECT = """[project]
name = "proj"

[project.scripts]
proj = "proj.cli._multicommand:run"
"""
MULTICOMMAND = """import click

class Multi(click.MultiCommand):
    def get_command(self, ctx, name):
        return importlib.import_module('.' + name, 'proj.cli').cli

@click.command(cls=Multi)
def run():
    pass
"""
BACKEND = """import subprocess
import click

@click.group()
def cli():
    pass

@cli.command("start")
def start():
    core = f"celery -A proj.celery_app.celery_app worker -l info --concurrency={{4}} -n core@%h"
    processes = [subprocess.Popen(core.split(" "))]
    facade = f"celery -A proj.celery_app.celery_app worker -l info -n facade@%h -Q facade"
    processes.append(subprocess.Popen(facade.split(" ")))
"""
DOCKERFILE = """FROM python:3.12
COPY --chmod=755 ./docker/backend/init.sh /
ENTRYPOINT ["/bin/bash", "/entrypoint.sh"]
CMD ["/init.sh"]
"""
INIT = "#!/bin/bash\nset -e\nproj db upgrade\nexec proj backend start --pidfile /tmp/main.pid\n"
COMPOSE = """services:
  proj:
    image: proj:latest
    build:
      context: .
      dockerfile: ./docker/backend/${TARGET:-Dockerfile}
    restart: unless-stopped
"""


def augur_like(limit: str, backend: str = BACKEND) -> dict[str, str]:
    return {"proj/celery_app.py": SETTINGS.format(limit=limit), "pyproject.toml": PYPROJECT,
            "proj/cli/_multicommand.py": MULTICOMMAND, "proj/cli/backend.py": backend,
            "docker/backend/Dockerfile": DOCKERFILE, "docker/backend/init.sh": INIT,
            "docker-compose.yml": COMPOSE}  # fmt: skip


@pytest.mark.parametrize(
    ("limit", "found"),
    [("", ["celery-task-unbounded docker-compose.yml:2"]),
     ("celery_app.conf.task_time_limit = 8", [])],  # the quiet twin: bounded below 10 s
)  # fmt: skip
def test_a_console_script_that_popens_workers_is_the_services_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    write(tmp_path, augur_like(limit))
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="proj/celery_app.py")
    assert [" ".join(f.split()[:2]) for f in located(report)] == found


def test_quiet_twin_a_console_script_that_starts_only_beat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, augur_like("", BACKEND.replace(" worker ", " beat ")))
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="proj/celery_app.py")
    assert located(report) == []


WORKER_MAIN = """from proj.celery_app import celery_app

if __name__ == "__main__":
    celery_app.worker_main(argv=["worker", "--loglevel=INFO"{limit}])
"""
WORKER_START = """from proj.celery_app import celery_app

def main():
    celery_app.Worker(concurrency=2, loglevel="INFO"{limit}).start()
"""
SYSTEM = """import os
os.system("celery -A proj.celery_app worker -l info{limit}")
"""


@pytest.mark.parametrize(
    ("module", "body", "command", "twin"),
    [("scripts/run_worker.py", WORKER_MAIN, "python scripts/run_worker.py", ', "--time-limit=20"'),
     ("proj/worker.py", WORKER_START, "python -m proj.worker", ", time_limit=20"),
     ("bin/worker.py", SYSTEM, "python bin/worker.py", " --time-limit 20")],
)  # fmt: skip
@pytest.mark.parametrize("bounded", [False, True])
def test_a_script_starting_a_worker_from_python_is_the_procfile_units_worker(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    body: str,
    command: str,
    twin: str,
    bounded: bool,
) -> None:
    write(tmp_path, {"proj/celery_app.py": SETTINGS.format(limit=""),
                     module: body.format(limit=twin if bounded else ""),
                     "Procfile": f"web: gunicorn proj.wsgi\nworker: {command}\n"})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="proj/celery_app.py")
    found = [" ".join(f.split()[:2]) for f in located(report)]
    # The twin's 20 s limit fits the Procfile platform's 30 s: nothing to say.
    assert found == ([] if bounded else ["celery-task-unbounded Procfile:2"])


def test_quiet_twin_a_docstring_that_says_how_to_start_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = '"""Start with: celery -A proj.celery_app worker -l info"""\nprint("hello")\n'
    procfile = "web: gunicorn proj.wsgi\nhello: python bin/hello.py\n"
    write(tmp_path, {"proj/celery_app.py": SETTINGS.format(limit=""), "bin/hello.py": body,
                     "Procfile": procfile})  # fmt: skip
    report = run_in(tmp_path, None, monkeypatch, history=False, celery="proj/celery_app.py")
    assert located(report) == []
