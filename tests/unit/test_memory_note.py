"""A crash is recorded with its attempt's last memory reading, in words for a person (the
doctor reads the reading itself from the attempt's `memory_mb`)."""

from __future__ import annotations

from tenure.worker.process_tree import memory_note


def test_the_reading_is_written_in_mb_or_gb_with_its_age() -> None:
    note = memory_note((1945.6, 10.0), 10.4)
    assert note == "; its last memory reading was 1.9 GB, 0.4 s before it died"
    assert (
        memory_note((812.4, 3.0), 3.0)
        == "; its last memory reading was 812 MB, 0.0 s before it died"
    )


def test_no_reading_writes_nothing() -> None:
    assert memory_note(None, 5.0) == "" and memory_note((0.0, 1.0), 5.0) == ""
