"""`redis://host:port/db?prefix=NAME` (also `redis+cluster://` and `redis+sentinel://`, see
connection.py): every change of state is one Lua script (lua/*.lua,
loaded by scripts.py), TIME is the clock. The store (store.py) holds its database as `db`
(database.py: connection, key names, running scripts) and inherits its verbs in parts: a job's
hot path (jobs.py), batches, guards, periodic jobs, what people read (operations.py); reading
stored hashes back into records is records.py."""

from tenure.stores.redis.connection import split_prefix
from tenure.stores.redis.store import RedisClusterStore, RedisStore

__all__ = ["RedisClusterStore", "RedisStore", "split_prefix"]
