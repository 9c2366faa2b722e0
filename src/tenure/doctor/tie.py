"""A worker started inside an image (a Dockerfile `CMD`/`ENTRYPOINT`, or a script one of them
runs) gets the stop grace of the Compose service or Kubernetes container that runs it.

Three ways a runner is seen to run a script worker:
- it names the script itself (`command: ./kubernetes/run.sh`, `entrypoint: [...entrypoint.sh]`),
  or the script dispatches on its first word (`command: celery-worker` and a
  `celery-worker)` case in the script);
- it builds the image (`build: .`, `build: {context: ., dockerfile: docker/Dockerfile}`) whose
  `CMD`/`ENTRYPOINT` is the worker, or names the script, and does not replace that process
  with its own `command`/`entrypoint`;
- it runs the same image by name (`image: shop/app:1.2` where a Compose service builds
  `shop/app`), as a Kubernetes container or another Compose service does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial

from tenure.doctor.dockerfile import (
    copied_files,
    env_settings,
    image_stem,
    instructions,
    named_images,
    renamed_files,
)
from tenure.doctor.images import built_dockerfile, image_name, image_repository, labelled_images
from tenure.doctor.laravel.deploy import (
    ArtisanWorker,
    _in_chart,
    _json_or_split,
    deployed,
    expand,
)
from tenure.doctor.model import Setting, Source, Value
from tenure.doctor.readers import app_roles, compose, kubernetes
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.development import development_services, is_development_compose
from tenure.doctor.readers.ecs import ecs_containers
from tenure.doctor.readers.process_units import process_units
from tenure.doctor.readers.worker_command import interpolate
from tenure.doctor.readers.yamlnodes import YamlProblem, YMap, get_path, load_documents
from tenure.doctor.shell_dispatch import (
    Dispatch,
    env_dispatch,
    env_dispatch_alternatives,
    function_arguments,
    reaching_labels,
)
from tenure.doctor.supervision import supervised
from tenure.doctor.walk import (
    Tree,
    decode,
    is_development_name,
    is_foreign_template,
)
from tenure.doctor.workflows import published_images

Worker = ArtisanWorker


@dataclass
class Runner:
    """A Compose service or Kubernetes container: what it runs and the grace around it."""

    label: str
    argv: list[str]  # its own entrypoint + command
    own_entrypoint: bool
    own_command: bool
    grace: partial[Value | None]
    dockerfile: str | None = None  # rel path of the Dockerfile it builds
    image: str | None = None  # the image name, without tag
    builds: bool = False
    env: dict[str, tuple[str, str]] | None = None  # its own environment: name -> (value, where)
    unit: Source | None = None  # its key line: where a finding about its grace belongs
    signal: Setting | None = None  # a Compose service's own stop_signal (else the image's)
    renamed: dict[str, str] | None = None  # image path -> project file its Dockerfile copies


def tie(
    tree: Tree, workers: list[Worker], scripts: dict[str, str], runners: list[Runner] | None = None
) -> list[Worker]:
    """Give each script or Dockerfile worker whose grace is unknown the grace of a runner; a
    supervisord program whose config the image copies in gets the container's grace when it
    is shorter: the platform kills supervisord and its programs when its own grace ends."""
    waiting = [w for w in workers if w.platform == "script" and w.platform_grace is None]
    inside = [w for w in workers if w.platform == "supervisord" and w.platform_grace is not None]
    if not waiting and not inside:
        return deployed(workers)
    runners = resolved_runners(tree, scripts) if runners is None else runners
    for worker in waiting:
        text = scripts.get(worker.source.path or "", "")
        running = _distinct([r for r in runners if _runs(r, worker, text, scripts)])
        # Each service running the script is a worker of its own, with its own grace: the
        # rule must name the one whose grace is too short, not the first one found.
        copies = [worker] + [replace(worker, options=dict(worker.options),
                                     option_notes=dict(worker.option_notes))
                             for _ in running[1:]]  # fmt: skip
        base = worker.name
        for copy, runner in zip(copies, running, strict=False):
            copy.platform_grace = runner.grace()
            copy.unit = runner.unit
            copy.name = f"{base} (run by {runner.label})"
            _resolve_options(copy, _environment(runner, scripts))
            passed = function_arguments(text, worker.source.line or 0, expand(runner.argv),
                                        _environment(runner, scripts))  # fmt: skip
            if passed:  # `start_worker -Q export "$@"`: read with the worker's own options
                copy.options["passed"] = " ".join(passed)
        workers += copies[1:]
    for worker in inside:
        workers += _inside_images(tree, worker, runners, scripts)
    return deployed(workers)


def resolved_runners(tree: Tree, scripts: dict[str, str]) -> list[Runner]:
    """Every runner, with the Dockerfile of the image it runs when the project has it: the
    one it builds, or the one whose image it names (built elsewhere, labelled, published)."""
    runners = list(_all_runners(tree))
    built = {r.image: r.dockerfile for r in runners if r.builds and r.image and r.dockerfile}
    labelled = labelled_images(scripts)
    named = named_images(tree.root, scripts)
    published = {r: f for r, f in published_images(tree.root).items() if f in scripts}
    for runner in runners:
        if runner.dockerfile is None and runner.image in built:
            runner.dockerfile = built[runner.image]
        elif runner.dockerfile is None and runner.image:
            repository = image_repository(runner.image)
            runner.dockerfile = published.get(repository) or labelled.get(
                repository, named.get(image_stem(runner.image))
            )
        if runner.dockerfile is not None and runner.dockerfile in scripts:
            path = os.path.join(tree.root, runner.dockerfile)
            runner.renamed = renamed_files(tree.root, path, scripts[runner.dockerfile])
    return runners


def _inside_images(
    tree: Tree, worker: Worker, runners: list[Runner], scripts: dict[str, str]
) -> list[Worker]:
    """A supervisord program in an image that several services run (compose.sample.yaml,
    compose.host.sample.yaml): each service's grace is a clock of its own, said on its own
    file, unless it equals the program's own. The program keeps its own stop wait when that
    is the shorter; a service whose grace is shorter replaces it."""
    switch = _autostart_variable(tree, worker)
    images = _distinct([r for r in runners if _copies(tree, r, worker, scripts)
                        and not _switched_off(r, switch, scripts)])  # fmt: skip
    own = worker.platform_grace
    base, replaced = worker.name, False
    out: list[Worker] = []
    for image in images:
        outer = image.grace()
        if outer is None or outer.amount is None or own is None or outer.amount == own.amount:
            continue  # the same clock twice is said once, on the program
        if not replaced and (own.amount is None or outer.amount < own.amount):
            copy, replaced = worker, True
        else:
            copy = replace(worker, options=dict(worker.options),
                           option_notes=dict(worker.option_notes))  # fmt: skip
            out.append(copy)
        copy.platform_grace = outer
        copy.unit = image.unit
        copy.name = f"{base} (in {image.label})"
    return out


def _distinct(runners: list[Runner]) -> list[Runner]:
    """One runner per file, name and grace: a service that two Kubernetes documents or a
    repeated YAML anchor yield twice is one worker. The same service in another Compose file
    (docker-compose.prod.yml, compose.sqlite.yaml) is a deployment of its own that a user may
    pick, so each file's service is checked and said on its own file (CONVENTION.md)."""
    seen: set[tuple[str | None, str, float | None]] = set()
    out = []
    for runner in runners:
        grace = runner.grace()
        key = (
            runner.unit.path if runner.unit else None,
            runner.label,
            grace.amount if grace is not None else None,
        )
        if key not in seen:
            seen.add(key)
            out.append(runner)
    return out


_AUTOSTART = re.compile(r"^\s*autostart\s*=\s*%\(ENV_(\w+)\)s\s*$", re.MULTILINE)


def _autostart_variable(tree: Tree, worker: Worker) -> str | None:
    """`autostart=%(ENV_ENABLE_HORIZON)s` in the worker's [program:x]: the container's
    environment decides whether supervisord starts it at all."""
    found = next((f for f in tree.files["supervisord"] if f.rel == worker.source.path), None)
    text = decode(found) if found is not None else None
    if not isinstance(text, str) or worker.source.line is None:
        return None
    lines = text.splitlines()
    start = max((i for i in range(worker.source.line) if lines[i].lstrip().startswith("[")),
                default=0)  # fmt: skip
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
               len(lines))  # fmt: skip
    match = _AUTOSTART.search("\n".join(lines[start:end]))
    return match.group(1) if match else None


def _switched_off(runner: Runner, variable: str | None, scripts: dict[str, str]) -> bool:
    if variable is None:
        return False
    value = _environment(runner, scripts).get(variable)
    return value is not None and value[0].strip().lower() in ("false", "0", "no", "off")


def _environment(runner: Runner, scripts: dict[str, str]) -> dict[str, tuple[str, str]]:
    """What the script sees: the image's ENV, overridden by the service's own environment."""
    env: dict[str, tuple[str, str]] = {}
    if runner.dockerfile is not None and runner.dockerfile in scripts:
        for e in env_settings(runner.dockerfile, scripts[runner.dockerfile]):
            env[e.key] = (e.value, str(e.source))
    return {**env, **(runner.env or {})}


def _resolve_options(worker: Worker, env: dict[str, tuple[str, str]]) -> None:
    """`--time-limit="${CELERY_TASK_TIME_LIMIT}"` takes the value the runner's environment
    gives it; an option it leaves unresolved stays as written (its default, or unknown, is the
    check's to say)."""
    for option, raw in list(worker.options.items()):
        if "$" not in raw:
            continue
        used = [name for name in _VARIABLES.findall(raw) if name in env]
        resolved = interpolate(raw, {name: value for name, (value, _) in env.items()})
        if resolved is None or not used:
            continue
        worker.options[option] = resolved
        worker.option_notes[option] = ", ".join(
            f"{name}={env[name][0]} ({env[name][1]})" for name in used
        )


_VARIABLES = re.compile(r"\$\{?(\w+)")


def _copies(tree: Tree, runner: Runner, worker: Worker, scripts: dict[str, str]) -> bool:
    """The runner's image has the worker's supervisord config copied in, and runs supervisord
    (the image's own process, or a command naming it)."""
    if runner.dockerfile is None or runner.dockerfile not in scripts:
        return False
    keeps = not (runner.own_entrypoint or runner.own_command) or any(
        "supervisord" in t for t in runner.argv
    )
    path = os.path.join(tree.root, runner.dockerfile)
    copied = copied_files(tree.root, path, scripts[runner.dockerfile])
    return keeps and os.path.join(tree.root, worker.source.path or "") in copied


def _all_runners(tree: Tree) -> Iterator[Runner]:
    for found in tree.files["yaml"]:
        # Another application's Compose file in a catalogue of templates runs its own image.
        if is_development_name(found.rel) or is_foreign_template(found.rel, _in_chart(found.path)):
            continue
        content = decode(found)
        try:
            documents = load_documents(content) if isinstance(content, str) else []
        except YamlProblem:
            continue
        for document in documents:
            yield from _runners(found.rel, document, os.path.dirname(found.path))
    for process in process_units(tree):  # a Procfile process or systemd unit running a script
        yield Runner(process.label, process.argv, False, True,
                     partial(_given, process.grace), unit=process.unit)  # fmt: skip
    for ecs in ecs_containers(tree):  # an ECS task definition's container (a Pulumi stack)
        yield Runner(ecs.label, ecs.argv, ecs.own_entrypoint, ecs.own_command,
                     partial(_given, ecs.grace), image=image_name(ecs.image), env=ecs.env,
                     unit=ecs.unit)  # fmt: skip


def _given(grace: Value | None) -> Value | None:
    return grace


def _runners(path: str, document: object, folder: str | None = None) -> Iterator[Runner]:
    if compose.is_compose(document):
        assert isinstance(document, YMap)
        if is_development_compose(document):
            return
        development = development_services(document["services"], folder)
        for name, service in document["services"].items():
            if not isinstance(service, YMap) or str(name) in development:
                continue
            argv = _words(service.get("entrypoint")) + _words(service.get("command"))
            yield Runner(
                f"Compose service {name}", argv, "entrypoint" in service, "command" in service,
                partial(compose._grace, path, service, {}, ReadResult()),
                built_dockerfile(path, service.get("build")), image_name(service.get("image")),
                builds="build" in service, env=_compose_env(path, name, service),
                unit=Source(path, document["services"].line_of(name)),
                signal=compose._signal(path, service, {}) if "stop_signal" in service else None,
            )  # fmt: skip
    elif app_roles.is_role_file(path, document):
        assert isinstance(document, YMap)
        for process in app_roles.role_processes(path, document, folder):
            yield Runner(process.label, process.argv, False, True,
                         partial(_given, process.grace), image=image_name(process.image),
                         env=process.env, unit=process.unit)  # fmt: skip
    elif kubernetes.is_manifest(document):
        assert isinstance(document, YMap)
        spec_path = kubernetes.POD_SPEC_PATHS.get(str(document.get("kind")))
        pod = get_path(document, *spec_path) if spec_path else None
        containers = pod.get("containers") if isinstance(pod, YMap) else None
        for container in containers if isinstance(containers, list) else []:
            if isinstance(container, YMap) and isinstance(pod, YMap):
                argv = _words(container.get("command")) + _words(container.get("args"))
                yield Runner(
                    f"Kubernetes container {container.get('name', '?')}", argv,
                    "command" in container, "args" in container,
                    partial(kubernetes._grace, path, pod, container, ReadResult()),
                    image=image_name(container.get("image")),
                    env=_container_env(path, container),
                    unit=Source(path, container.line),
                )  # fmt: skip


def _compose_env(path: str, name: str, service: YMap) -> dict[str, tuple[str, str]]:
    """A Compose service's `environment:` (a map or a KEY=value list); values that are
    themselves ${...} are left out: Compose fills them from a shell the doctor cannot see."""
    raw = service.get("environment")
    where = f"{path}, service {name}"
    pairs: list[tuple[str, object]] = []
    if isinstance(raw, YMap):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = [(k, v) for k, eq, v in (str(i).partition("=") for i in raw) if eq]
    return {str(k): (str(v), where) for k, v in pairs
            if v is not None and not isinstance(v, dict | list) and "$" not in str(v)}  # fmt: skip


def _container_env(path: str, container: YMap) -> dict[str, tuple[str, str]]:
    where = f"{path}, container {container.get('name', '?')}"
    items = [i for i in container.get("env") or [] if isinstance(i, YMap) and "name" in i]
    return {str(i["name"]): (str(i["value"]), where) for i in items if i.get("value") is not None}


def _runs(runner: Runner, worker: Worker, script: str, scripts: dict[str, str]) -> bool:
    """The runner starts the script (or image) the worker is in, and, when the script picks
    the worker by an environment variable (`role=${CONTAINER_ROLE:-app}` then
    `elif [ "$role" = "queue" ]`), the runner's environment picks the worker's branch."""
    if not _starts(runner, worker, script, scripts):
        return False
    line = worker.source.line
    ways = env_dispatch_alternatives(script, line) if script and line is not None else []
    environment = _environment(runner, scripts)
    return not ways or any(_passes(chain, environment) for chain in ways)


def _passes(chain: list[Dispatch], environment: dict[str, tuple[str, str]]) -> bool:
    for variable, default, labels in chain:
        value = environment.get(variable, (default, ""))[0]
        # Set nowhere the doctor sees (a ConfigMap, a secret): may be the worker's, as before.
        if value is not None and value not in labels:
            return False
    return True


def _starts(runner: Runner, worker: Worker, script: str, scripts: dict[str, str]) -> bool:
    path = worker.source.path or ""
    line = worker.source.line
    copied = _copied_as(runner, path, script, line)
    if copied is not None:
        return copied
    if _names(runner.argv, path, script, runner.own_entrypoint, line):
        return True
    if runner.dockerfile is None or runner.dockerfile not in scripts:
        return False
    processes = _image_processes(scripts[runner.dockerfile])
    if path == runner.dockerfile:  # the worker is the image's own CMD or ENTRYPOINT line
        line = worker.source.line
        return any(
            line == at and not (runner.own_entrypoint or (word == "CMD" and runner.own_command))
            for word, at, _ in processes
        )
    if not runner.own_entrypoint and supervised(runner.dockerfile, scripts[runner.dockerfile],
                                                path, scripts):  # fmt: skip
        return True  # an s6/runit service the image's supervisor starts
    # A script the image's ENTRYPOINT or CMD runs, when the runner keeps that process.
    kept = [
        argv
        for word, _, argv in processes
        if not runner.own_entrypoint and (word == "ENTRYPOINT" or not runner.own_command)
    ]
    # The image's ENTRYPOINT script receives the service's command, else the image's CMD.
    given = runner.argv if runner.own_command else [
        t for word, _, argv in processes if word == "CMD" for t in argv]  # fmt: skip
    return any(
        _names(argv + (given if word == "ENTRYPOINT" else []), path, script, True, line)
        for word, _, argv in processes
        if argv in kept
    )


def _copied_as(runner: Runner, path: str, script: str, line: int | None) -> bool | None:
    """The runner's command names a file by the path its image copied it to (cookiecutter's
    `command: /start-celeryworker`): it runs the worker's script when that path holds it, and
    not when it holds another file (`/start`, the web server's). None when the command names
    no such path."""
    if not runner.renamed:
        return None
    tokens = expand(runner.argv)
    for i, token in enumerate(tokens):
        source = runner.renamed.get(os.path.normpath(token)) if token.startswith("/") else None
        if source is not None:
            return source == path and _dispatches_to(script, line, tokens[i + 1 :])
    return None


def _image_processes(text: str) -> list[tuple[str, int, list[str]]]:
    """(CMD|ENTRYPOINT, line, argv) of the last stage's last CMD and last ENTRYPOINT."""
    last: dict[str, tuple[str, int, list[str]]] = {}
    for line, word, rest in instructions(text):
        if word == "FROM":
            last = {}
        elif word in ("CMD", "ENTRYPOINT"):
            last[word] = (word, line, _json_or_split(rest))
    return list(last.values())


# s6/runit service files: every service's is called so, and the image's supervisor starts it;
# a command with the word `run` (`cloudflared tunnel run`) does not name it.
SUPERVISED = {"run", "finish", "up", "down"}


def _names(
    argv: list[str], path: str, script: str, own_entrypoint: bool, line: int | None = None
) -> bool:
    """argv runs the script at `path`: by its name or stem, or as the sub-command of an
    entrypoint script that dispatches on it; then the worker's `line` must be in that
    sub-command's branch (`web)` of the same script runs nginx, not the worker)."""
    names = {os.path.basename(path), os.path.splitext(os.path.basename(path))[0]} - SUPERVISED
    tokens = expand(argv)
    for i, t in enumerate(tokens):
        if t and (os.path.basename(t) in names or os.path.splitext(os.path.basename(t))[0]
                  in names or _same_file(t, path)):  # fmt: skip
            return _dispatches_to(script, line, tokens[i + 1 :])
    if own_entrypoint or not tokens or not script:
        return False
    labels = reaching_labels(script, line) if line is not None else set()
    if labels:  # the worker's line is in a branch, or a function branches call: their labels
        return tokens[0] in labels
    # Reached by no branch the doctor can see: any branch named so.
    return re.search(rf"^\s*{re.escape(tokens[0])}\)", script, re.MULTILINE) is not None


def _same_file(token: str, path: str) -> bool:
    """`bin/run` in a Procfile, `/opt/app/bin/run` in a unit: the project's script by its
    path, also when its name (`run`) says nothing."""
    written = os.path.normpath(token)
    return written == os.path.normpath(path) or written.endswith("/" + os.path.normpath(path))


def _dispatches_to(script: str, line: int | None, args: list[str]) -> bool:
    """The script, given `args`, reaches the worker's line: always when that line is in no
    `case` branch or no argument is seen, else when the first argument is its branch's label.
    A branch chosen by an environment variable (`case "$LYCHEE_MODE" in worker)`) is not the
    arguments' to choose: the runner's environment decides it (_runs)."""
    if script and env_dispatch(script, line) is not None:
        return True
    labels = reaching_labels(script, line) if script and line is not None else set()
    return not labels or not args or args[0] in labels


def _words(value: object) -> list[str]:
    if isinstance(value, str):
        return expand([value])
    if isinstance(value, list):
        return expand([str(v) for v in value if v is not None])
    return []
