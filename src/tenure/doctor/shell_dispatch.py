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


Dispatch = tuple[str, str | None, set[str]]


def env_dispatch(script: str, line: int | None) -> Dispatch | None:
    """(VARIABLE, its default, labels) when the worker's line is in an `if`/`elif` test or a
    `case` branch on a variable of the environment rather than on the script's arguments."""
    return _env_dispatch(script, line)[0]


def env_dispatch_chain(script: str, line: int | None) -> list[Dispatch]:
    """Every environment test around the worker's line, innermost first: `elif [ "$MODULE" =
    'celery_monitoring' ]` around `if [[ "$USE_MONITORING" == "True" ]]` around the worker."""
    out: list[Dispatch] = []
    lines = script.splitlines()
    while line is not None and len(out) < 8:
        found, index = _env_dispatch(script, line)
        if found is None or index is None or any(found[0] == seen[0] for seen in out):
            break  # a test on a variable already tested: a sibling branch, not an outer one
        out.append(found)
        start = _chain_start(lines, index)
        line = start + 1 if start is not None and start + 1 < line else None
    return out


def env_dispatch_alternatives(script: str, line: int, depth: int = 0) -> list[list[Dispatch]]:
    """The chains of environment tests that reach `line`, one per way in: the line's own, or,
    in a function's body, those of each call (`worker) start_worker` and `all) start_api;
    start_worker`). Empty when some way in passes no test at all."""
    chain = env_dispatch_chain(script, line)
    if chain:
        return [chain]
    function = _enclosing_function(script, line)
    if function is None or depth > 3:
        return []
    call = re.compile(rf"(^|[\s;&|(]){re.escape(function)}($|[\s;&|)])")
    alternatives: list[list[Dispatch]] = []
    for number, text in enumerate(script.splitlines(), start=1):
        if call.search(text) and not FUNCTION.match(text.strip()):
            ways = env_dispatch_alternatives(script, number, depth + 1)
            if not ways:
                return []
            alternatives += ways
    return alternatives


def _chain_start(lines: list[str], index: int) -> int | None:
    """The `if` line that opens the chain an `if`/`elif` test at `index` belongs to; None for a
    `case` branch (its header is not followed further)."""
    if not re.match(r"^(?:el)?if\b", lines[index].strip()):
        return None
    if lines[index].strip().startswith("if"):
        return index
    closed = 0
    for j in range(index - 1, -1, -1):
        stripped = lines[j].strip()
        if re.match(r"^fi\b", stripped):
            closed += 1
        elif re.match(r"^if\b", stripped) and not re.search(r"\bfi\s*;?\s*$", stripped):
            if not closed:
                return j
            closed -= 1
    return None


def _env_dispatch(script: str, line: int | None) -> tuple[Dispatch | None, int | None]:
    if line is None:
        return None, None
    lines = script.splitlines()
    subject, labels, at = None, set(), None
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
            subject, labels, at = test.group(1), {test.group(2)}, index
            break
        if stripped.startswith(("else", ";;", "esac")) or stripped.endswith(";;"):
            return None, None
        label = CASE_LABEL.match(lines[index])
        if label:
            labels = {w.strip().strip("\"'") for w in label.group(1).split("|")}
            header = next((CASE_ON.match(t.strip()) for t in reversed(lines[:index])
                           if t.strip().startswith("case ")), None)  # fmt: skip
            subject, at = (header.group(1) if header else None), index
            break
    if subject is None or subject.isdigit():
        return None, None
    chosen = _alias(script, subject, labels)
    if chosen[0].isdigit():  # `DEPLOYMENT=${1:-api}`: an argument
        return None, None
    return chosen, at


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


PASSED = re.compile(r"\"?\$\{?@(?::\d+)?\}?\"?")


def function_arguments(
    script: str, line: int, argv: list[str], environment: dict[str, tuple[str, str]]
) -> list[str] | None:
    """The words a shell function running `celery ... "$@"` at `line` is called with, in the
    branch the runner's command picks (`celery-worker) start_celery_worker -Q celery`): the
    worker's queues and options live at the call, not in the function. A call in the `then`
    arm of `if [[ -n "$VAR" ]]` is left out when the runner's environment does not set VAR.
    None when the line passes no arguments on, or no call is seen."""
    lines = script.splitlines()
    if not 0 < line <= len(lines) or not PASSED.search(lines[line - 1]):
        return None
    function = _enclosing_function(script, line)
    if function is None:
        return None
    call = re.compile(rf"(?:^|[\s;&|(]){re.escape(function)}(?=$|[\s;&|)])")
    words: list[str] = []
    found = False
    for number, text in enumerate(lines, start=1):
        match = call.search(text)
        if not match or FUNCTION.match(text.strip()) or text.strip().startswith("#"):
            continue
        labels = branch_labels(script, number)
        if labels and not labels & set(argv[:1]):
            continue
        if _unset_arm(lines, number, environment):
            continue
        found = True
        rest = text[match.end() :].split("#")[0].split(";")[0].split()
        words += [w for w in rest if not PASSED.fullmatch(w)]
    return words if found else None


def _unset_arm(lines: list[str], number: int, environment: dict[str, tuple[str, str]]) -> bool:
    """The call sits in the `then` arm of `if [[ -n "$VAR" ... ]]` and VAR is set nowhere the
    runner's environment shows."""
    for text in reversed(lines[: number - 1]):
        stripped = text.strip()
        if stripped.startswith(("else", "fi", ";;")) or stripped.endswith(")"):
            return False
        test = re.match(r"^(?:el)?if\s+\[\[?\s+-n\s+\"?\$\{?(\w+)", stripped)
        if test:
            return test.group(1) not in environment
        if stripped.startswith(("if", "elif")):
            return False
    return False
