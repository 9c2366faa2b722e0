"""Check out every corpus project at its pinned commit, from a local mirror of git repositories.

    .venv/bin/python -m bench.doctor_corpus.fetch [--mirror DIR]

The mirror (default $TENURE_CORPUS_MIRROR, else /work/.mirror) holds one git directory per
repository, as `OWNER+NAME/repo`, `OWNER+NAME`, `OWNER/NAME.git` or `OWNER/NAME`. Nothing is
downloaded: a project whose repository or commit is not in the mirror is reported and skipped.
Checkouts go to bench/doctor_corpus/.cache/NAME (gitignored) and are reused when already at the
pinned commit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
MANIFEST = HERE / "manifest.toml"
DEFAULT_MIRROR = "/work/.mirror"
SETS = (
    "tuning", "check", "check2", "independent", "check3", "check4", "check5", "check6", "check7",
    "check8", "check9", "check10", "check11",
)  # fmt: skip
# Annotated blind and not yet scored: "all" leaves them out, so that re-scoring every spent set
# cannot score one by accident (it is scored once, by naming it, and then moved out of here).
UNSCORED = ("check11",)


@dataclass(frozen=True)
class Project:
    name: str
    repo: str  # OWNER/NAME
    commit: str
    kind: str  # laravel | celery
    celery: str | None  # the Celery settings file, relative to the checkout (--celery)
    path: str  # the folder doctor is pointed at, relative to the checkout
    deploy: str  # how it deploys, in a few words
    # tuning: read and fixed against | check, check2 .. check11: annotated first, scored once
    # independent: the ten applications kept out of everything else, annotated blind, scored once
    set: str = "tuning"

    @property
    def checkout(self) -> Path:
        return CACHE / self.name


def load_manifest(path: Path = MANIFEST) -> list[Project]:
    data = tomllib.loads(path.read_text())
    out = []
    for entry in data["project"]:
        if entry.get("set") not in SETS:
            raise ValueError(f"{path}: project {entry.get('name')!r} needs set = one of {SETS}")
        out.append(
            Project(
                name=entry["name"],
                repo=entry["repo"],
                commit=entry["commit"],
                kind=entry["kind"],
                celery=entry.get("celery"),
                path=entry.get("path", "."),
                deploy=entry.get("deploy", ""),
                set=entry["set"],
            )
        )
    return out


def in_set(projects: list[Project], which: str) -> list[Project]:
    """The projects of one set, or for "all" those of every set but the unscored ones."""
    if which != "all" and which not in SETS:
        raise ValueError(f"unknown set {which!r}: one of {', '.join((*SETS, 'all'))}")
    if which == "all":
        return [p for p in projects if p.set not in UNSCORED]
    return [p for p in projects if p.set == which]


def mirror_dir() -> str:
    return os.environ.get("TENURE_CORPUS_MIRROR", DEFAULT_MIRROR)


def find_mirror(mirror: Path, repo: str) -> Path | None:
    owner, _, name = repo.partition("/")
    for candidate in (
        mirror / f"{owner}+{name}" / "repo",
        mirror / f"{owner}+{name}",
        mirror / owner / f"{name}.git",
        mirror / owner / name,
    ):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def fetch_one(project: Project, mirror: Path) -> str | None:
    """Check the project out at its commit; None on success, else why not."""
    target = project.checkout
    if (target / ".git").exists():
        head = git("rev-parse", "HEAD", cwd=target).stdout.strip()
        if head == project.commit:
            return None
    source = find_mirror(mirror, project.repo)
    if source is None:
        return f"{project.repo} is not in the mirror {mirror}"
    if not (target / ".git").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        done = git("clone", "--quiet", "--shared", "--no-checkout", str(source), str(target))
        if done.returncode != 0:
            return f"git clone {source} failed: {done.stderr.strip()}"
    missing = missing_blobs(target, project.commit)
    if missing:  # a mirror may leave out its largest files (fonts, archives): check out the rest
        git("sparse-checkout", "init", "--no-cone", cwd=target)
        patterns = ["/*"] + ["!/" + glob_escape(path) for path in missing]
        (target / ".git" / "info" / "sparse-checkout").write_text("\n".join(patterns) + "\n")
    done = git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--force",
               project.commit, cwd=target)  # fmt: skip
    if done.returncode != 0:
        return f"commit {project.commit} of {project.repo} not in the mirror: {done.stderr.strip()}"
    return None


def missing_blobs(target: Path, commit: str) -> list[str]:
    """Paths at `commit` whose content the mirror does not hold."""
    listing = git("ls-tree", "-r", "-z", commit, cwd=target)
    if listing.returncode != 0:
        return []
    entries = []
    for record in listing.stdout.split("\0"):
        meta, _, path = record.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            entries.append((parts[2], path))
    check = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        cwd=target,
        input="".join(f"{sha}\n" for sha, _ in entries),
        capture_output=True,
        text=True,
        check=False,
    )
    absent = {line.split()[0] for line in check.stdout.splitlines() if line.endswith(" missing")}
    return [path for sha, path in entries if sha in absent]


def glob_escape(path: str) -> str:
    return "".join("\\" + c if c in "*?[]!#\\" else c for c in path)


def fetch_all(projects: list[Project], mirror: Path) -> dict[str, str]:
    """Problems by project name; an empty dict when every project is checked out."""
    problems = {}
    for project in projects:
        problem = fetch_one(project, mirror)
        if problem is not None:
            problems[project.name] = problem
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--mirror", default=mirror_dir(), help="directory of git mirrors")
    args = parser.parse_args(argv)
    projects = load_manifest()
    problems = fetch_all(projects, Path(args.mirror))
    for name, problem in problems.items():
        print(f"{name}: {problem}", file=sys.stderr)
    print(f"{len(projects) - len(problems)} of {len(projects)} projects checked out in {CACHE}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
