"""The files a team looks for on its second day: a LICENSE matching pyproject.toml (and
shipped in the wheel and the sdist: scripts/try-install checks the built ones), a changelog
in the Keep a Changelog shape, and a README install line that works from a clone."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_file_matches_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert declared == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text


def test_the_changelog_keeps_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com" in text
    versions = re.findall(r"^## (\S+)", text, re.M)
    assert versions[0] == "Unreleased"
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version in versions  # the version pyproject.toml builds has its entry
    sections = set(re.findall(r"^### (\w+)", text, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_readme_installs_from_a_clone_without_claiming_a_release() -> None:
    quickstart = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1]
    first_block = quickstart.split("```sh", 1)[1].split("```", 1)[0]
    assert "pip install ." in first_block
    assert "pip install tenure" not in first_block  # not published: no line that would fail
    assert "not on PyPI yet" in quickstart.split("```python", 1)[0]


def test_a_missing_extra_is_named_with_a_line_that_installs_it_here() -> None:
    """From a clone, `pip install 'tenure[web]'` asks PyPI for a package tenure has not
    published there (or that someone else has): the line names the clone's directory, as
    pip recorded it (PEP 610's direct_url.json)."""
    from tenure.extras import directory_of, install_line, installed_from

    clone = '{"url": "file:///home/me/src/ten%20ure", "dir_info": {}}'
    assert directory_of(clone) == ("/home/me/src/ten ure", False)
    editable = '{"url": "file:///work/tenure", "dir_info": {"editable": true}}'
    assert directory_of(editable) == ("/work/tenure", True)
    wheel = '{"url": "https://files.example/tenure-0.1.0.whl", "archive_info": {}}'
    assert directory_of(wheel) is None and directory_of(None) is None
    assert directory_of("not json") is None
    line = install_line("web")
    source = installed_from()
    if source is None:
        assert line == "pip install 'tenure[web]'"
    else:
        assert line == f"pip install {'-e ' if source[1] else ''}'{source[0]}[web]'"
