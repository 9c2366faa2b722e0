"""The hot path's records built without their frozen dataclass's __init__
(records.quick_reservation, payload.decode's Arguments) are the records __init__ builds:
every field, in order, equal."""

from __future__ import annotations

import dataclasses

from tenure.core import payload
from tenure.core.records import Reservation, quick_reservation
from tenure.core.retry import Policy


def _same(quick: object, slow: object) -> None:
    assert quick == slow
    assert hash(quick) == hash(slow)
    assert list(vars(quick)) == [f.name for f in dataclasses.fields(slow)]  # type: ignore[arg-type]
    assert not hasattr(type(slow), "__post_init__")  # nothing that __init__ would run is skipped


def test_a_quick_reservation_is_the_dataclass_s() -> None:
    fields = ("j1", "send", "default", "[]", Policy(), 2, 2, 30.5, "b1")
    _same(quick_reservation(*fields), Reservation(*fields))
    _same(quick_reservation(*fields[:-1]), Reservation(*fields[:-1]))  # batch_id's default


def test_decoded_arguments_are_the_dataclass_s() -> None:
    text = '{"args": [1, "a"], "kwargs": {"k": 2}, "trace": {"traceparent": "00-x"}}'
    expected = payload.Arguments((1, "a"), {"k": 2}, {"traceparent": "00-x"}, None)
    decoded = payload.decode(text)
    assert decoded == expected
    assert list(vars(decoded)) == [f.name for f in dataclasses.fields(expected)]
    assert not hasattr(payload.Arguments, "__post_init__")
    assert payload.decode('{"args": [], "passed_from": "j0"}').passed_from == "j0"
