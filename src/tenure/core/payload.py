"""Job payloads: JSON only (never pickle), size-limited, optionally encrypted.

A payload is the text stored with the job: {"args": [...], "kwargs": {...}}, and, when the
dispatch was traced, "trace": {"traceparent": ...} (tenure.tracing); a chain link that takes
the previous link's result (pass_result=True) names that link in "passed_from". Payloads
stored without them (older rows, untraced dispatches) decode the same. Encrypted payloads are
{"encrypted": "aesgcm-v1", "data": "<base64 nonce+ciphertext>"}, with the key taken from
$TENURE_ENCRYPTION_KEY (32 random bytes, url-safe base64).
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from typing import Any

from tenure.core.errors import ConfigError, DecryptionUnavailable, PayloadError

# The environment variable holding the encryption key: named here, in core, so that payload
# reads it without importing settings (settings lists it with the others it reads).
ENCRYPTION_KEY_ENV = "TENURE_ENCRYPTION_KEY"

DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024


@dataclass(frozen=True)
class Arguments:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    # the W3C trace context of the dispatch (traceparent, tracestate); None when not traced
    trace: dict[str, str] | None = None
    # a chain link with pass_result: the previous link, whose result is its first argument
    passed_from: str | None = None


def encode(
    job_name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    encrypted: bool = False,
    trace: dict[str, str] | None = None,
    passed_from: str | None = None,
) -> str:
    """Encode arguments as JSON text, or raise PayloadError saying which argument is at fault."""
    envelope: dict[str, Any] = {"args": list(args), "kwargs": kwargs}
    if trace:
        envelope["trace"] = trace
    if passed_from:
        envelope["passed_from"] = passed_from
    try:
        text = json.dumps(envelope, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        # Encoding argument by argument costs a second pass: only to say which one failed.
        _check_json(job_name, args, kwargs)
        raise PayloadError(f"payload of job '{job_name}' cannot be stored as JSON") from exc
    if encrypted:
        text = _encrypt(text)
    size = len(text.encode())
    if size > max_bytes:
        raise PayloadError(
            f"payload of job '{job_name}' is {size:,} bytes, over the {max_bytes:,}-byte limit; "
            "store large data elsewhere (a table, object storage) and pass its id instead"
        )
    return text


_NEW = object.__new__

# the scanner json.loads runs (JSONDecoder sets it in __init__; typeshed does not say so)
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """json.loads(text), by the decoder's scanner straight when the text is one JSON value from
    its first character to its last (as tenure writes payloads): the same value without the
    two calls json.loads makes around the scan (a worker decodes one payload a job). Anything
    else (whitespace around the value, not JSON, not a str) goes to json.loads: its value, or
    its error."""
    try:
        value, end = _SCAN(text, 0)
    except Exception:  # StopIteration (no value at 0), ValueError, TypeError, RecursionError
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def decode(text: str) -> Arguments:
    """Decode a stored payload; raise PayloadError with a clear reason if it is corrupt."""
    try:
        data = _loads(text)
    except RecursionError:
        raise PayloadError("payload is nested too deeply to decode") from None
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"payload is not valid JSON ({exc}): {text[:80]!r}") from None
    if isinstance(data, dict) and "encrypted" in data:
        return decode(_decrypt(data))
    if not isinstance(data, dict) or not isinstance(data.get("args", []), list):
        raise PayloadError(f"payload is not an object with 'args' and 'kwargs': {text[:80]!r}")
    kwargs = data.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise PayloadError(f"payload 'kwargs' is not an object: {text[:80]!r}")
    passed = data.get("passed_from")
    trace = data.get("trace")  # an untraced dispatch has none: no call to read it
    # Arguments(...) without a frozen dataclass's object.__setattr__ per field (one a job);
    # tests/unit/test_quick_records.py holds the two equal
    arguments = _NEW(Arguments)
    fields = arguments.__dict__  # stored one by one: no dict of keyword arguments built
    fields["args"] = tuple(data.get("args", ()))
    fields["kwargs"] = kwargs
    fields["trace"] = None if trace is None else _trace_carrier(trace)
    fields["passed_from"] = passed if isinstance(passed, str) else None
    return arguments


def _trace_carrier(value: Any) -> dict[str, str] | None:
    """The stored trace context, or None: a damaged one costs the link, never the job."""
    if not isinstance(value, dict):
        return None
    carrier = {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
    return carrier or None


def is_encrypted(text: str) -> bool:
    return text.startswith('{"encrypted":')


def seal(text: str) -> str:
    """`text` encrypted as a payload is (job results use the same sealing and key)."""
    return _encrypt(text)


def unseal(text: str) -> str:
    """The plain text of what `seal` made; text that is not sealed comes back unchanged."""
    if not is_encrypted(text):
        return text
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return _decrypt(data) if isinstance(data, dict) else text


def _check_json(job_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    labelled = [(f"argument {i + 1}", v) for i, v in enumerate(args)]
    labelled += [(f"keyword argument '{k}'", v) for k, v in kwargs.items()]
    for label, value in labelled:
        try:
            json.dumps(value, allow_nan=False)
        except RecursionError:
            raise PayloadError(f"{label} of job '{job_name}' is nested too deeply") from None
        except (TypeError, ValueError) as exc:
            raise PayloadError(
                f"{label} of job '{job_name}' cannot be stored as JSON "
                f"({type(value).__name__}: {exc}); pass plain data (str, int, float, bool, None, "
                "list, dict), e.g. an id or an ISO date string"
            ) from None


def decryption_problem(install: str = "pip install 'tenure[crypto]'") -> str | None:
    """What keeps this process from sealing and opening encrypted payloads (the package,
    the key, or both), or None: a worker whose app has encrypted jobs checks it at start,
    rather than fail every such job with a reason that blames the payload. `install`: the
    line that adds the `crypto` extra to this install (tenure.extras.install_line)."""
    missing = []
    try:
        import cryptography.hazmat.primitives.ciphers.aead  # noqa: F401
    except ImportError:
        missing.append(f"the 'cryptography' package ({install})")
    # each a noun phrase: the worker's refusal reads "it needs A; and B"
    raw = os.environ.get(ENCRYPTION_KEY_ENV)
    if not raw:
        missing.append(f"a key in ${ENCRYPTION_KEY_ENV} ({KEY_HINT})")
    else:
        try:
            size = len(base64.urlsafe_b64decode(raw))
        except ValueError:
            missing.append(f"a valid key in ${ENCRYPTION_KEY_ENV} (it is not url-safe base64)")
        else:
            if size != 32:
                missing.append(
                    f"a valid key in ${ENCRYPTION_KEY_ENV} (it holds {size} bytes; expected 32)"
                )
    return "; and ".join(missing) or None


KEY_HINT = (
    "32 random bytes in url-safe base64, e.g. from python -c 'import os, base64; "
    "print(base64.urlsafe_b64encode(os.urandom(32)).decode())'"
)


def _key() -> bytes:
    raw = os.environ.get(ENCRYPTION_KEY_ENV)
    if not raw:
        raise ConfigError(f"encrypted=True needs a key in ${ENCRYPTION_KEY_ENV}: {KEY_HINT}")
    try:
        key = base64.urlsafe_b64decode(raw)
    except ValueError:
        raise ConfigError(
            f"${ENCRYPTION_KEY_ENV} is not url-safe base64: expected 32 random bytes encoded so"
        ) from None
    if len(key) != 32:
        raise ConfigError(f"${ENCRYPTION_KEY_ENV}: expected 32 bytes, got {len(key)}")
    return key


def _encrypt(text: str) -> str:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:  # pragma: no cover - depends on the install
        raise ConfigError(
            "encrypted=True needs the 'cryptography' package: pip install 'tenure[crypto]'"
        ) from None
    nonce = os.urandom(12)
    sealed = nonce + AESGCM(_key()).encrypt(nonce, text.encode(), b"tenure-payload")
    return json.dumps({"encrypted": "aesgcm-v1", "data": base64.b64encode(sealed).decode()})


def _decrypt(data: dict[str, Any]) -> str:
    """The plain text; DecryptionUnavailable when this process lacks the key or the package
    (the payload may be sound: another process opens it), PayloadError when it is damaged."""
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise DecryptionUnavailable(
            "an encrypted payload needs the 'cryptography' package to be read: "
            "pip install 'tenure[crypto]'"
        ) from None
    try:
        key = _key()
    except ConfigError as exc:
        raise DecryptionUnavailable(str(exc)) from None
    try:
        sealed = base64.b64decode(data["data"])
        plain = AESGCM(key).decrypt(sealed[:12], sealed[12:], b"tenure-payload")
    except (KeyError, ValueError, TypeError, InvalidTag) as exc:
        raise PayloadError(
            f"encrypted payload cannot be decrypted ({type(exc).__name__})"
        ) from None
    return plain.decode()
