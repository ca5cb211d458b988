"""Redis / Valkey stores for LangGraph: Query Engine mode when available, plain Redis otherwise.

The errors a store can raise (bad input, a lost connection, a server's refusal) are importable from
here too.
"""

from langmem_adapters.core import errors as store_errors
from langmem_adapters.core.errors import *  # noqa: F403  (the errors a store can raise)
from langmem_adapters.redis.store import AsyncRedisStore, RedisStore

__all__ = [
    "AsyncRedisStore",
    "RedisStore",
]
__all__ += store_errors.__all__
