"""PostgreSQL + pgvector stores for LangGraph.

The errors a store can raise (bad input, a lost connection, a server's refusal) are in
:mod:`langmem_adapters.errors` (and ``langmem_adapters``); their old paths from here still work,
with a ``DeprecationWarning``.
"""

from langmem_adapters.compat import moved
from langmem_adapters.errors import STORE_ERRORS
from langmem_adapters.postgres.embedded import embedded_dsn, embedded_store
from langmem_adapters.postgres.opening import PoolConfig, PostgresIndexConfig
from langmem_adapters.postgres.store import AsyncPostgresStore, PostgresStore

__all__ = [
    "AsyncPostgresStore",
    "PoolConfig",
    "PostgresIndexConfig",
    "PostgresStore",
    "embedded_dsn",
    "embedded_store",
]

__getattr__ = moved(
    __name__, dict.fromkeys([*STORE_ERRORS, "MissingExtraError"], "langmem_adapters.errors")
)
