"""A worker started by a process supervisor inside an image: an s6-overlay service
(`etc/s6-overlay/s6-rc.d/celery/run`, `etc/services.d/celery/run`) or a runit service
(`etc/service/celery/run`) copied into the image.
The image's own process (`ENTRYPOINT ["/init"]`, `runsvdir`, phusion's `my_init`, or a script
that execs one) starts every service it finds, so the container that runs the image runs the
worker, and its stop grace is the worker's."""

from __future__ import annotations

import os
import re

from tenure.doctor.dockerfile import copied_sources, instructions

SUPERVISORS = {"init", "s6-svscan", "runsvdir", "my_init", "runit", "s6-overlay-suexec"}
SERVICE_DIRS = {"s6-rc.d", "services.d", "service", "sv"}
# A last stage that copies s6 services in and sets no process of its own runs on a base image
# whose ENTRYPOINT is s6-overlay's /init: nothing else would start those services.
_S6_DESTINATION = re.compile(r"\s/etc/(?:s6-overlay|services\.d)(?:/\S*)?\s*$")


def supervised(dockerfile: str, text: str, worker: str, scripts: dict[str, str]) -> bool:
    """The image `dockerfile` (its text) runs a supervisor that starts the script at `worker`
    (paths relative to the project)."""
    return _runs_supervisor(text, scripts) and _copied_service(dockerfile, text, worker)


def _runs_supervisor(text: str, scripts: dict[str, str]) -> bool:
    """The last stage's CMD or ENTRYPOINT is a supervisor, or a project script that execs one."""
    last: dict[str, str] = {}
    into_s6 = False
    for _, word, rest in instructions(text):
        if word == "FROM":
            last, into_s6 = {}, False
        elif word in ("CMD", "ENTRYPOINT"):
            last[word] = rest
        elif word in ("COPY", "ADD"):
            into_s6 = into_s6 or bool(_S6_DESTINATION.search(rest))
    if into_s6 and not last:  # the base image's own /init (serversideup/php's -fpm-nginx)
        return True
    for rest in last.values():
        words = re.findall(r"[\w./${}-]+", rest)
        if any(os.path.basename(w) in SUPERVISORS for w in words):
            return True
        for w in words:  # `CMD ["/bin/bash", "-c", "exec ${SRC}/docker/init.bash"]`
            name = os.path.basename(w)
            script = next((t for p, t in scripts.items() if os.path.basename(p) == name), "")
            if name.endswith((".sh", ".bash")) and re.search(
                r"^\s*exec\s+\S*(runsvdir|s6-svscan|my_init)\b", script, re.MULTILINE
            ):
                return True
    return False


def _copied_service(dockerfile: str, text: str, worker: str) -> bool:
    """A `.../<service dir>/<name>/run` file inside a folder or file the Dockerfile copies."""
    parts = worker.split(os.sep)
    if len(parts) < 3 or parts[-1] != "run" or parts[-3] not in SERVICE_DIRS:
        return False
    for source in copied_sources(text):
        for context in ("", os.path.dirname(dockerfile)):
            copied = os.path.normpath(os.path.join(context, source))
            if copied == "." or worker == copied or worker.startswith(copied + os.sep):
                return True
    return False
