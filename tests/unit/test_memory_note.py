"""A crash is recorded with its attempt's last memory reading, in words the doctor reads back."""

from __future__ import annotations

from tenure.worker.process_tree import memory_note, memory_read


def test_the_reading_is_written_in_mb_or_gb_with_its_age_and_read_back() -> None:
    note = memory_note((1945.6, 10.0), 10.4)
    assert note == "; its last memory reading was 1.9 GB, 0.4 s before it died"
    assert memory_read(note) == 1.9 * 1024
    assert memory_read(memory_note((812.4, 3.0), 3.0)) == 812.0
    # the worker's own --memory kill names what it measured
    assert memory_read("the child process (pid 7) ... used 812 MB, over the worker's") == 812.0


def test_no_reading_writes_nothing_and_reads_nothing() -> None:
    assert memory_note(None, 5.0) == "" and memory_note((0.0, 1.0), 5.0) == ""
    assert memory_read("killed by signal 9 (SIGKILL)") is None and memory_read(None) is None
