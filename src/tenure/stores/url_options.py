"""The options a store URL may carry (its `?query`), checked before anything connects.

A mistyped option (`redis://host/0?prefx=jobs`) used to reach the driver: redis-py passed it
on as a keyword, raised TypeError at the first command, and the worker retried that forever as
"store unavailable". Every store now refuses an option it does not know, naming it and the
accepted ones (a ConfigError: exit 2 on the command line).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from tenure.core.errors import ConfigError

# tenure's own, taken out of the URL before the driver sees it
REDIS_OWN = ("prefix", "wait_replicas")
# what redis-py reads from a URL's query and its connections take as text (redis-py 5 to 8)
REDIS_DRIVER = (
    "db",
    "client_name",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_read_size",
    "socket_keepalive",
    "retry_on_timeout",
    "max_connections",
    "health_check_interval",
    "timeout",
    "protocol",
)
REDIS_TLS = (
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_cert_reqs",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_ciphers",
    "ssl_check_hostname",
    "ssl_min_version",
)
POSTGRES_OWN = ("schema", "pooler", "listen_url")


def accepted(url: str) -> tuple[str, ...]:
    """The query options a URL of this scheme may carry."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "redis":
        return REDIS_OWN + REDIS_DRIVER
    if scheme == "rediss":
        return REDIS_OWN + REDIS_DRIVER + REDIS_TLS
    if scheme == "redis+sentinel":
        return REDIS_OWN
    if scheme == "redis+cluster":
        return ("prefix",)
    if scheme in ("postgresql", "postgres"):
        return POSTGRES_OWN + libpq_keywords()
    return ()  # sqlite: a file path; a `?` would become part of the file's name


def libpq_keywords() -> tuple[str, ...]:
    """The connection keywords the installed libpq knows (host, sslmode, connect_timeout...)."""
    try:
        from psycopg import pq
    except ImportError:  # pragma: no cover - the store names its extra before this
        return ()
    return tuple(o.keyword.decode() for o in pq.Conninfo.get_defaults())


def check(url: str) -> None:
    """Raise ConfigError for a query option the URL's store does not take."""
    query = urlsplit(url).query
    if not query:
        return
    allowed = accepted(url)
    scheme = url.split(":", 1)[0].lower()
    if not allowed:
        raise ConfigError(
            f"{scheme} store URL: takes no ?options (a file path only, e.g. "
            f"sqlite:///jobs.db), got ?{query}"
        )
    for key, _ in parse_qsl(query, keep_blank_values=True):
        if key not in allowed:
            raise ConfigError(
                f"{scheme} store URL: unknown option {key!r}; the accepted ones are "
                f"{', '.join(allowed)}"
            )
