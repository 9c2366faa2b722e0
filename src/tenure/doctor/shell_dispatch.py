"""Which branch of a shell script a line is in, and what picks it: `case "$1" in worker)`,
`if [ "$1" = "worker" ]`, a function that such a branch calls, or an environment variable
(`role=${CONTAINER_ROLE:-app}` then `elif [ "$role" = "queue" ]`). Entrypoint scripts use
these to run a web server or a worker from one image; tie.py asks which one a service runs."""

from __future__ import annotations

import re

ENV_TEST = re.compile(
    r"^(?:el)?if\s+\[\[?\s*\"?\$\{?([A-Za-z_]\w*)\}?\"?\s*==?\s*[\"']?([\w.\-]+)[\"']?"
)
CASE_ON = re.compile(r"^case\s+\"?\$\{?([A-Za-z_]\w*)\}?\"?\s+in\b")


def env_dispatch(script: str, line: int | None) -> tuple[str, str | None, set[str]] | None:
    """(VARIABLE, its default, labels) when the worker's line is in an `if`/`elif` test or a
    `case` branch on a variable of the environment rather than on the script's arguments."""
    if line is None:
        return None
    lines = script.splitlines()
    subject, labels = None, set()
    closed = 0
    for index in range(min(line - 1, len(lines)) - 1, -1, -1):
        stripped = lines[index].strip()
        if re.match(r"^fi\b", stripped):
            closed += 1
            continue
        if closed:
            closed -= 1 if re.match(r"^if\b", stripped) else 0
            continue
        test = ENV_TEST.match(stripped)
        if test:
            subject, labels = test.group(1), {test.group(2)}
            break
        if stripped.startswith(("else", ";;", "esac")) or stripped.endswith(";;"):
            return None
        label = CASE_LABEL.match(lines[index])
        if label:
            labels = {w.strip().strip("\"'") for w in label.group(1).split("|")}
            header = next((CASE_ON.match(t.strip()) for t in reversed(lines[:index])
                           if t.strip().startswith("case ")), None)  # fmt: skip
            subject = header.group(1) if header else None
            break
    if subject is None or subject.isdigit():
        return None
    chosen = _alias(script, subject, labels)
    return None if chosen[0].isdigit() else chosen  # `DEPLOYMENT=${1:-api}`: an argument


def _alias(script: str, name: str, labels: set[str]) -> tuple[str, str | None, set[str]]:
    """`role=${CONTAINER_ROLE:-app}`: the test on $role is a test on CONTAINER_ROLE."""
    found = re.search(
        rf"^\s*(?:export\s+|local\s+)?{re.escape(name)}=\"?\$\{{(\w+)(?::?-([^}}]*))?\}}",
        script,
        re.MULTILINE,
    )
    if found:
        return found.group(1), found.group(2), labels
    return name, None, labels


def reaching_labels(script: str, line: int, depth: int = 0) -> set[str]:
    """The case labels that reach `line`: its own branch's, or, in a function's body, those of
    the branches calling that function (`celery-worker) start_celery_worker`), a few calls deep.
    Empty when the doctor cannot tell."""
    labels = branch_labels(script, line)
    function = _enclosing_function(script, line)
    if labels or function is None or depth > 3:
        return labels
    lines = script.splitlines()
    call = re.compile(rf"(^|[\s;&|(]){re.escape(function)}($|[\s;&|)])")
    out: set[str] = set()
    for number, text in enumerate(lines, start=1):
        if call.search(text) and not FUNCTION.match(text.strip()):
            out |= reaching_labels(script, number, depth + 1)
    return out


def _enclosing_function(script: str, line: int) -> str | None:
    """The name of the shell function whose body holds `line` (`name() {` or `function name`)."""
    for text in reversed(script.splitlines()[: max(line - 1, 0)]):
        stripped = text.strip()
        match = FUNCTION.match(stripped) or re.match(r"^function\s+([\w.\-]+)", stripped)
        if match:
            return match.group(1)
        if stripped == "}":
            return None
    return None


CASE_LABEL = re.compile(r"^\s*\(?\s*([\w.\-\"'|* ]+)\)\s*(?:#.*)?$")


FUNCTION = re.compile(r"^([\w.\-]+)\s*\(\s*\)")


def branch_labels(script: str, line: int) -> set[str]:
    """The labels of the `case` branch holding `line` (`worker|queue)` gives both), or of the
    `if`/`elif [ "$1" = "worker" ]` test around it; empty when the line is in no branch (a
    `;;`, `esac` or `else` comes first, going up; a closed `if ... fi` is passed over)."""
    lines = script.splitlines()
    closed = 0  # `fi`s seen going up: their if-blocks hold other lines, not ours
    # In the `else`/`elif` arm of an `if` on something else than $1 (an environment switch
    # inside a `case` branch: `celery-exportworker) if [[ -n "$MINIMAL" ]]; ... else worker`):
    # that `if` is passed over, and the branch around it is the line's.
    arm = False
    for text in reversed(lines[: max(line - 1, 0)]):
        stripped = text.strip()
        if re.match(r"^fi\b", stripped):
            closed += 1
            continue
        test = IF_TEST.match(stripped)
        if closed:
            closed -= 1 if re.match(r"^if\b", stripped) else 0
            continue
        if test and test.group(1):
            # The else arm of `if [ "$1" = web ]` is every other word: the doctor cannot tell.
            return set() if arm else {test.group(1)}
        if stripped.startswith("else") or (test and stripped.startswith("elif")):
            arm = True
            continue
        if arm and test and stripped.startswith("if"):
            arm = False
            continue
        if (
            stripped.endswith((";;", "{", "}"))
            or stripped.startswith(("esac", "case ", "function "))
            or FUNCTION.match(stripped)
        ):
            return set()  # no branch encloses the line, or it is in a function's body
        match = CASE_LABEL.match(text)
        if match:
            return {w.strip().strip("\"'") for w in match.group(1).split("|")}
    return set()


# `if [ "$1" = "worker" ]; then`, `elif [[ "${1}" == worker ]]`: group 1 is the word, when the
# test is on the script's first argument; otherwise (another test) group 1 is empty.
IF_TEST = re.compile(
    r"^(?:el)?if\s+(?:\[\[?\s*\"?\$\{?1\}?\"?\s*==?\s*[\"']?([\w.\-]+)[\"']?\s*\]\]?|.*)"
)
