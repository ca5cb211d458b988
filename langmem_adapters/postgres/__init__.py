"""PostgreSQL + pgvector stores for LangGraph."""

from langmem_adapters.errors import (
    InvalidArgumentError,
    StoreConnectionError,
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
    "InvalidArgumentError",
    "PoolConfig",
    "PostgresIndexConfig",
    "PostgresStore",
    "StoreConnectionError",
    "embedded_dsn",
    "embedded_store",
]
