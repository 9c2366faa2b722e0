"""Store URLs shown to people."""

from __future__ import annotations


def redact(url: str) -> str:
    """A URL fit for logs: the password replaced."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else f"{scheme}://{user}@{host}"
