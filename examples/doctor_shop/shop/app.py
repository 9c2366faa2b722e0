"""The shop's tenure app: the worker loads this module, which registers every job."""

import tenure

app = tenure.App("sqlite:///shop-not-created.db")

from shop import billing, catalogue  # noqa: E402,F401  (register the jobs)
