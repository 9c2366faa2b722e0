from __future__ import annotations

import base64
import contextlib
import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenure.core import payload
from tenure.core.errors import ConfigError, PayloadError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.lists(json_values, max_size=4), st.dictionaries(st.text(), json_values, max_size=4))
def test_json_arguments_round_trip(args: list[Any], kwargs: dict[str, Any]) -> None:
    decoded = payload.decode(payload.encode("job", tuple(args), kwargs))
    assert list(decoded.args) == args and decoded.kwargs == kwargs


@given(st.text())
def test_decoding_arbitrary_text_never_crashes(text: str) -> None:
    with contextlib.suppress(PayloadError):
        payload.decode(text)


@given(st.text(alphabet=' \t\n{}[]",:0123456789.eE+-aeflnrstu\\'))
def test_the_payload_reads_as_json_loads_reads_it(text: str) -> None:
    """decode's own read of the JSON (the scanner straight, for a worker's hot path) gives
    json.loads' value, or fails where json.loads fails: whitespace, a value with text after
    it, a half of one."""
    try:
        expected: Any = json.loads(text)
    except ValueError:
        expected = ValueError
    try:
        got: Any = payload._loads(text)
    except ValueError:
        got = ValueError
    assert got == expected  # (no NaN: the alphabet cannot spell it)


def test_a_payload_with_whitespace_or_text_after_it() -> None:
    assert payload.decode(' {"args": [1], "kwargs": {}}\n').args == (1,)
    with pytest.raises(PayloadError, match="not valid JSON"):
        payload.decode('{"args": [1], "kwargs": {}} {}')
    with pytest.raises(PayloadError, match="nested too deeply"):
        payload.decode("[" * 100_000 + "]" * 100_000)


def test_non_json_argument_names_the_argument() -> None:
    with pytest.raises(PayloadError, match="keyword argument 'when' of job 'j'"):
        payload.encode("j", (), {"when": object()})
    with pytest.raises(PayloadError, match="argument 2"):
        payload.encode("j", (1, {1, 2}), {})
    with pytest.raises(PayloadError, match="argument 1 of job 'j' cannot be stored as JSON"):
        payload.encode("j", (float("nan"),), {})
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(PayloadError, match="argument 1 of job 'j' is nested too deeply"):
        payload.encode("j", (deep,), {})


def test_size_limit_is_checked_at_encode() -> None:
    with pytest.raises(PayloadError, match="over the 100-byte limit"):
        payload.encode("j", ("x" * 200,), {}, max_bytes=100)


def test_decode_rejects_wrong_shapes() -> None:
    for text in ("[1, 2]", '{"args": 3}', '{"kwargs": [1]}', "not json", ""):
        with pytest.raises(PayloadError):
            payload.decode(text)


def test_encrypted_payload_round_trip_and_wrong_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        payload.ENCRYPTION_KEY_ENV, base64.urlsafe_b64encode(os.urandom(32)).decode()
    )
    text = payload.encode("j", ("card 4242",), {}, encrypted=True)
    assert "4242" not in text and payload.is_encrypted(text)
    assert payload.decode(text).args == ("card 4242",)
    monkeypatch.setenv(
        payload.ENCRYPTION_KEY_ENV, base64.urlsafe_b64encode(os.urandom(32)).decode()
    )
    with pytest.raises(PayloadError, match="cannot be decrypted"):
        payload.decode(text)
    assert json.loads(text)["encrypted"] == "aesgcm-v1"


def test_encryption_without_a_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(payload.ENCRYPTION_KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match="TENURE_ENCRYPTION_KEY"):
        payload.encode("j", (), {}, encrypted=True)


def new_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def test_the_trace_context_travels_in_the_payload_and_old_payloads_decode_the_same() -> None:
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    text = payload.encode("job", (1,), {"k": 2}, trace=carrier)
    assert payload.decode(text) == payload.Arguments((1,), {"k": 2}, carrier)
    assert "trace" not in payload.encode("job", (1,), {}, trace=None)
    assert payload.decode('{"args":[1],"kwargs":{}}').trace is None  # stored before tracing
    for damaged in ('"00-x"', "[1]", '{"traceparent": 7}', "{}"):
        decoded = payload.decode(f'{{"args":[1],"kwargs":{{}},"trace":{damaged}}}')
        assert decoded.args == (1,) and decoded.trace is None  # the link is lost, not the job


def test_what_a_worker_needs_to_decrypt_reads_as_a_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's refusal is "it needs " + this: it read "it needs encrypted=True needs a
    key in $TENURE_ENCRYPTION_KEY" (found in the day-two trial)."""
    monkeypatch.delenv(payload.ENCRYPTION_KEY_ENV, raising=False)
    missing = payload.decryption_problem()
    assert missing is not None
    assert missing.startswith("a key in $TENURE_ENCRYPTION_KEY (32 random bytes in url-safe"), (
        missing
    )
    assert "needs" not in missing
    monkeypatch.setenv(payload.ENCRYPTION_KEY_ENV, base64.urlsafe_b64encode(b"x" * 16).decode())
    assert payload.decryption_problem() == (
        "a valid key in $TENURE_ENCRYPTION_KEY (it holds 16 bytes; expected 32)"
    )
