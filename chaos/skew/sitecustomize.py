"""Clock-skew shim: imported at start-up by every Python process whose PYTHONPATH starts with
this directory (the worker and the children it spawns). Offsets time.time, time.time_ns and
datetime.now/utcnow by $CHAOS_CLOCK_SKEW seconds, as a host whose clock is off would be.
CLOCK_REALTIME via time.clock_gettime is left alone: the chaos ledger uses it.
"""

import datetime as _dt
import os
import time as _time

_skew = float(os.environ.get("CHAOS_CLOCK_SKEW", "0") or 0)

if _skew:
    _real_time = _time.time
    _real_time_ns = _time.time_ns
    _time.time = lambda: _real_time() + _skew
    _time.time_ns = lambda: _real_time_ns() + int(_skew * 1e9)

    class _SkewedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return super().now(tz) + _dt.timedelta(seconds=_skew)

        @classmethod
        def utcnow(cls):
            return super().utcnow() + _dt.timedelta(seconds=_skew)

    _dt.datetime = _SkewedDatetime
