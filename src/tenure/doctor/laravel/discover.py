"""Where the Laravel applications under a tree are: the root itself, or sub-folders holding
`artisan` and `composer.json` (`backend/`, `api/` beside a front-end and the deployment files).

Kept free of tree-sitter: the engine asks before it knows an audit will run.
"""

from __future__ import annotations

import os

from tenure.doctor.walk import IGNORED_DIRS, SKIP_DIRS, is_development_name, is_template_folder

# Deep enough for `apps/api/`, shallow enough not to walk a whole monorepo for nothing.
MAX_DEPTH = 3
# Folders that hold other projects' code, never the application being deployed.
NOT_AN_APP = IGNORED_DIRS | SKIP_DIRS | {"vendor", "storage", "bootstrap", "stubs", "packages"}


def is_laravel(folder: str) -> bool:
    return all(os.path.isfile(os.path.join(folder, f)) for f in ("artisan", "composer.json"))


def laravel_apps(root: str) -> list[str]:
    """The root when it is a Laravel application; else every sub-folder (up to MAX_DEPTH deep)
    that is one, outside dependencies, tests, templates and development folders. An
    application's own sub-folders are not searched: one `artisan` per application."""
    if is_laravel(root):
        return [root]
    found: list[str] = []
    for directory, dirnames, _ in os.walk(root, followlinks=False):
        depth = os.path.relpath(directory, root).count(os.sep) + (directory != root)
        if directory != root and is_laravel(directory):
            found.append(directory)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(
            d for d in dirnames
            if depth < MAX_DEPTH and not d.startswith(".") and d not in NOT_AN_APP
            and not is_template_folder(d)
            and not is_development_name(os.path.relpath(os.path.join(directory, d, "x"), root))
            and not os.path.islink(os.path.join(directory, d))
        )  # fmt: skip
    return found
