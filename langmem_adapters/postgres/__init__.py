"""PostgreSQL + pgvector stores for LangGraph.

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
from langmem_adapters.postgres.embedded import embedded_dsn, embedded_store
from langmem_adapters.postgres.store import (
    AsyncPostgresStore,
    PoolConfig,
    PostgresIndexConfig,
    PostgresStore,
)

__all__ = [
    "AsyncPostgresStore",
    "EmbeddingDimensionError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "NonJSONValueError",
    "PoolConfig",
    "PostgresIndexConfig",
    "PostgresStore",
    "StoreConnectionError",
    "StoreError",
    "embedded_dsn",
    "embedded_store",
]
