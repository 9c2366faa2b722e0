"""Jobs whose errors are hostile to being recorded, for test_hostile_errors_e2e.py: a text no
store can encode as it is, an exception whose str() raises, a huge message."""

import tenure

STORE_URL = "__STORE_URL__"
LEDGER = "__LEDGER__"

app = tenure.App(STORE_URL)


@app.job(timeout=30, tries=3, backoff=0)
def unencodable() -> None:
    raise ValueError("a\x00b \ud800 end")


class Unreadable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


@app.job(timeout=30, tries=3, backoff=0)
def unreadable() -> None:
    raise Unreadable()


@app.job(timeout=30, tries=1)
def huge_message() -> None:
    raise ValueError("HEAD" + "x" * 5_000_000 + "TAIL")


@app.job(timeout=30, tries=3, backoff=0)
async def async_unreadable() -> None:
    raise Unreadable()
