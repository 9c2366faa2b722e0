"""A broker URL built where the doctor cannot read it still says its transport: an f-string of
REDIS_* settings, or transport options only kombu's Redis transport knows. Cut from a Celery
config module (`broker_url = f"{REDIS_SCHEME}://{REDIS_HOST}:{REDIS_PORT}/{DB}"`,
`task_acks_late = True`) and a task allowing itself 3900 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import located, run_in, write

CONFIG = """from app.configs import REDIS_HOST, REDIS_PORT, REDIS_SCHEME, DB

broker_url = {url}
broker_transport_options = {options}
task_acks_late = True
"""
TASK = """from celery import shared_task


@shared_task(
    name="fetch",
    soft_time_limit=3600,
    time_limit=3900,
)
def fetch():
    pass
"""


@pytest.mark.parametrize(
    ("url", "options", "expected"),
    [('f"{REDIS_SCHEME}://{REDIS_HOST}:{REDIS_PORT}/{DB}"', "{}",
      ["celery-visibility-below-time-limit app/tasks.py:7"]),
     ("BROKER", '{"queue_order_strategy": "priority", "sep": ":"}',
      ["celery-visibility-below-time-limit app/tasks.py:7"]),
     # quiet twins: a RabbitMQ URL built the same way, and nothing that names the transport
     ('f"amqp://{REDIS_HOST}:5672//"', "{}", []),
     ("BROKER", "{}", [])],
)  # fmt: skip
def test_the_transport_from_the_shape_of_an_unreadable_broker_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, options: str, expected: list[str]
) -> None:
    files = {"app/celery_config.py": CONFIG.format(url=url, options=options),
             "app/tasks.py": TASK}  # fmt: skip
    report = run_in(write(tmp_path, files), None, monkeypatch, history=False,
                    celery="app/celery_config.py")  # fmt: skip
    found = [" ".join(f.split(" ")[:2]) for f in located(report) if "visibility" in f]
    # The task whose own limit passes the timeout is the finding, on its time_limit line;
    # "every task has no time limit" is not said beside it.
    assert found == expected
