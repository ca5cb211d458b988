"""PostgreSQL + pgvector stores for LangGraph.

The errors a store can raise (bad input, a lost connection, a server's refusal) are importable from
here too, and ``MissingExtraError`` (``embedded_dsn`` without the ``embedded`` extra).
"""

from langmem_adapters.core import errors as store_errors
from langmem_adapters.core.errors import *  # noqa: F403  (the errors a store can raise)
from langmem_adapters.errors import MissingExtraError
from langmem_adapters.postgres.embedded import embedded_dsn, embedded_store
from langmem_adapters.postgres.opening import PoolConfig, PostgresIndexConfig
from langmem_adapters.postgres.store import AsyncPostgresStore, PostgresStore

__all__ = [
    "AsyncPostgresStore",
    "MissingExtraError",
    "PoolConfig",
    "PostgresIndexConfig",
    "PostgresStore",
    "embedded_dsn",
    "embedded_store",
]
__all__ += store_errors.__all__
