"""Redis / Valkey stores for LangGraph: Query Engine mode when available, plain Redis otherwise.

The errors a store can raise (bad input, a lost connection, a server's refusal) are in
:mod:`langmem_adapters.errors` (and ``langmem_adapters``); their old paths from here still work,
with a ``DeprecationWarning``.
"""

from langmem_adapters.compat import moved
from langmem_adapters.errors import STORE_ERRORS
from langmem_adapters.redis.store import AsyncRedisStore, RedisStore

__all__ = [
    "AsyncRedisStore",
    "RedisStore",
]

__getattr__ = moved(__name__, dict.fromkeys(STORE_ERRORS, "langmem_adapters.errors"))
