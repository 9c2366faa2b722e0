"""The optional parts of tenure and the one line that says how to get one that is missing."""

from __future__ import annotations

import functools
import json
from urllib.parse import unquote, urlparse

# Import name -> the name PyPI knows it by: `pip install yaml` installs nothing useful.
DISTRIBUTIONS = {
    "yaml": "PyYAML",
    "tree_sitter": "tree-sitter",
    "tree_sitter_php": "tree-sitter-php",
    "psycopg": "psycopg",
    "psycopg_pool": "psycopg-pool",
    "redis": "redis",
    "starlette": "starlette",
    "jinja2": "Jinja2",
    "uvicorn": "uvicorn",
    "cryptography": "cryptography",
}


def missing_extra(what: str, extra: str, exc: ImportError) -> str:
    """'tenure doctor needs the 'doctor' extra (PyYAML is not installed): pip install ...'"""
    module = (exc.name or "").split(".")[0]
    package = DISTRIBUTIONS.get(module, module or "a package")
    return f"{what} needs the '{extra}' extra ({package} is not installed): {install_line(extra)}"


def install_line(extra: str) -> str:
    """The pip line that adds an extra to this tenure: from the directory it was installed
    from when it came from one (a clone: tenure is not on PyPI yet, and `pip install
    'tenure[web]'` would fetch whatever PyPI has by that name), else the published name."""
    source = installed_from()
    if source is None:
        return f"pip install 'tenure[{extra}]'"
    path, editable = source
    return f"pip install {'-e ' if editable else ''}'{path}[{extra}]'"


@functools.cache
def installed_from() -> tuple[str, bool] | None:
    """(directory, editable) when this tenure was installed from a local directory, per the
    `direct_url.json` pip records (PEP 610); None for an index install or no metadata."""
    # imported here: only a missing extra's message needs it, and importlib.metadata (with
    # email, zipfile, csv) is a fifth of the start-up of every process that imports tenure
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("tenure").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    return directory_of(text)


def directory_of(direct_url: str | None) -> tuple[str, bool] | None:
    if not direct_url:
        return None
    try:
        data = json.loads(direct_url)
    except ValueError:
        return None
    url = urlparse(str(data.get("url", "")))
    if "dir_info" not in data or url.scheme != "file":
        return None  # an archive or a VCS URL: the published line is as good as any
    return unquote(url.path), bool(data["dir_info"].get("editable"))
