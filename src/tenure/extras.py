"""The optional parts of tenure and the one line that says how to get one that is missing."""

from __future__ import annotations

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
    return (
        f"{what} needs the '{extra}' extra ({package} is not installed): "
        f"pip install 'tenure[{extra}]'"
    )
