"""`.env` files a deployment script writes: an installer's `cat >$ROOT/.env <<END_ENV ...
END_ENV`. The file exists only on the server, so no `.env*` in the repository shows what the
application runs with; the heredoc does, and a key it leaves out falls to config's default."""

from __future__ import annotations

import os
import re

from tenure.doctor.laravel.php import EnvEntry, read_env
from tenure.doctor.model import Source
from tenure.doctor.walk import is_development_name

# `cat >$IXPROOT/.env <<END_ENV`, `cat > "${APP_DIR}/.env" << 'EOF'`, `tee .env <<EOF`.
HEREDOC = re.compile(
    r"^[^#\n]*\b(?:cat\s*>|tee\s+(?:-a\s+)?)\s*[\"']?(?:[^\s\"'<>]*/)?\.env[\"']?\s*"
    r"<<-?\s*[\"']?(\w+)[\"']?[ \t]*$",
    re.M,
)
SCRIPTS = (".sh", ".bash")


def written_env_files(
    files: list[tuple[str, bytes]], base: str
) -> list[tuple[str, dict[str, EnvEntry]]]:
    """(name, entries) for each `.env` a shell script writes with a heredoc; the name reads
    `.env (written by tools/install.sh:373)`, each entry's line that of the script."""
    out: list[tuple[str, dict[str, EnvEntry]]] = []
    for path, data in files:
        rel = os.path.relpath(path, base)
        if not path.endswith(SCRIPTS) or b".env" not in data or is_development_name(rel):
            continue
        source = data.decode("utf-8", "replace")
        for match in HEREDOC.finditer(source):
            start = source.count("\n", 0, match.end()) + 1  # the heredoc's first line, 0-based
            lines = source.splitlines()
            body: list[str] = []
            for raw in lines[start:]:
                if raw.strip() == match.group(1):
                    break
                body.append(raw)
            entries = read_env("\n".join(body), rel)
            shifted = {
                k: EnvEntry(e.value, Source(rel, (e.source.line or 0) + start, e.source.note))
                for k, e in entries.items()
            }
            out.append((f".env (written by {rel}:{start})", shifted))
    return out
