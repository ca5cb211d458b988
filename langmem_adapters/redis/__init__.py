"""Redis / Valkey stores for LangGraph: Query Engine mode when available, plain Redis otherwise.

The errors a store can raise (bad input, a lost connection) are importable from here too.
"""

from langmem_adapters.errors import (
    EmbeddingDimensionError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidRecordError,
    InvalidValueError,
    NonJSONValueError,
    StoreConnectionError,
    StoreError,
)
from langmem_adapters.redis.store import AsyncRedisStore, RedisStore

__all__ = [
    "AsyncRedisStore",
    "EmbeddingDimensionError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "NonJSONValueError",
    "RedisStore",
    "StoreConnectionError",
    "StoreError",
]
