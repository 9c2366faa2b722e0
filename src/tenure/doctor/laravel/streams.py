"""PHP's URL-aware file functions (`file_get_contents($url)`, `fopen`...) as HTTP calls: which
calls read a URL rather than a local file, and what bounds them (default_socket_timeout, a
stream context). Split from jobs.py, which finds the calls; this module judges each."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from tenure.doctor.laravel.php import Evaluator, call_args, text
from tenure.doctor.model import Source, Value


@dataclass
class HttpCall:
    call: str  # as written, shortened
    timeout: Value  # amount None: nothing bounds it
    source: Source
    library: str  # Http | Guzzle | curl | file_get_contents, fopen... (PHP's stream functions)


# PHP's URL-aware file functions and the argument that is the stream context, if any.
STREAM_READERS = {"file_get_contents": 2, "fopen": 3, "file": 2, "get_headers": 2,
                  "simplexml_load_file": None, "readfile": 2}  # fmt: skip
# What makes an argument a local path: the framework's path helpers, __DIR__, php:// streams.
LOCAL = ("storage_path(", "base_path(", "public_path(", "resource_path(", "app_path(",
         "database_path(", "config_path(", "__DIR__", "__FILE__", "sys_get_temp_dir(",
         "tempnam(", "php://", "Storage::", "->getRealPath(", "->getPathname(",
         "->path(")  # fmt: skip
SOCKET_DEFAULT_S = 60.0


def stream_call(call: Node, function: str, body: str, ev: Evaluator, at: Source) -> HttpCall | None:
    """`file_get_contents($url)` and its kin on anything but a literal local path: a URL, a
    variable, a concatenation, `config()`/`env()`, a method's return. PHP bounds each socket
    read by default_socket_timeout (60 s unless ini_set or a stream context says otherwise)."""
    args = call_args(call)
    if not args:
        return None
    target = args[0]
    written = text(target)
    resolved = ev.eval(target)
    value = resolved.value if resolved.known and isinstance(resolved.value, str) else None
    if value is not None and not value.startswith(("http://", "https://", "ftp://", "ftps://")):
        return None  # a literal (or resolved) local path
    if value is None and (any(marker in written for marker in LOCAL) or _local(written, body)):
        return None
    # 'public/css/app_' . $id . '.css': a literal start that is no URL's is a relative path.
    prefix = re.match(r"""^(['"])([^'"$]+)\1\s*\.""", written)
    if value is None and prefix and not prefix.group(2).lower().startswith(("http", "ftp")):
        return None
    if function == "fopen" and len(args) > 1:
        mode = ev.eval(args[1])
        if isinstance(mode.value, str) and mode.value.strip("bt") not in ("r", ""):
            return None  # the http:// wrapper only reads: a writable mode opens a local file
    index = STREAM_READERS[function]
    shown = f"{function}({written[:40]})"
    if (index is not None and len(args) > index and not _context_without_timeout(body)) or (
        "stream_context_set_default" in body
    ):
        return None  # a stream context decides, and may set its own timeout
    setting = re.search(r"ini_set\(\s*['\"]default_socket_timeout['\"]\s*,\s*['\"]?(\d+)", body)
    if setting:
        seconds = float(setting.group(1))
        where = Source(at.path, at.line, "ini_set default_socket_timeout")
    else:
        # The default bounds each socket read, not the transfer: a server that trickles bytes
        # keeps the call alive until the job is killed, so no timeout is set (FACTS.md).
        return HttpCall(shown, Value("default_socket_timeout", None, "s", Source(
            note=f"PHP default_socket_timeout {SOCKET_DEFAULT_S:g} s bounds each read only")),
            at, function)  # fmt: skip
    clock = Value("default_socket_timeout", seconds, "s", where)
    return HttpCall(shown, clock, at, function)


def _context_without_timeout(body: str) -> bool:
    """The stream context is made here (`stream_context_create([...])` with only 'ssl' or
    header options) and no 'timeout' is written anywhere in the method: it sets none."""
    return "stream_context_create" in body and not re.search(r"""['"]timeout['"]""", body)


# Functions that only work on local files (http:// has no stat, no write): a variable passed to
# one in the same code holds a local path.
LOCAL_ONLY = ("file_exists", "is_file", "is_dir", "is_writable", "filesize", "filemtime",
              "file_put_contents", "unlink", "touch", "mkdir", "realpath")  # fmt: skip
# `$zip_path`, and a property so named (`$this->file`: the upload a job was given).
PATH_NAME = re.compile(r"^\$(this->)?\w*(path|file|filename|dir|directory)$", re.IGNORECASE)


def _local(written: str, body: str) -> bool:
    """`$file` after `file_exists($file)`, or a variable or property named for a path
    (`$zip_path`, `$this->file`)."""
    if not re.fullmatch(r"\$[\w>-]+", written):
        return False
    if PATH_NAME.match(written) and not written.lower().endswith(("url", "uri")):
        return True
    used = rf"\b({'|'.join(LOCAL_ONLY)})\(\s*{re.escape(written)}\s*[,)]"
    return re.search(used, body) is not None
