"""langmem_adapters: durable, fast, correct long-term memory for LangGraph agents.

Stores (drop-in ``BaseStore``s), memory tiers over any store, agent memory tools and a memory
manager that forms memories from conversations. Every error
the package raises subclasses :class:`LangmemAdaptersError`; each is defined in
:mod:`langmem_adapters.errors` and re-exported here, as are the main classes of the subpackages
(``PostgresStore`` from ``langmem_adapters.postgres``, ``StoredItem`` from
``langmem_adapters.core.records``...): this module re-exports, it defines nothing.
"""

from langmem_adapters import errors
from langmem_adapters.core.records import StoredItem
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import *  # noqa: F403  (every error of the package)
from langmem_adapters.manager import AsyncBackgroundManager, BackgroundManager, MemoryManager
from langmem_adapters.memory import (
    Attribution,
    Episode,
    EpisodicMemory,
    Fact,
    ProceduralMemory,
    Procedure,
    SemanticMemory,
    WorkingMemory,
    to_context,
)
from langmem_adapters.postgres import (
    AsyncPostgresStore,
    PostgresStore,
    embedded_dsn,
    embedded_store,
)
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.tools import (
    create_manage_memory_tool,
    create_memory_tools,
    create_search_memory_tool,
)

__all__ = [
    "AsyncBackgroundManager",
    "AsyncPostgresStore",
    "AsyncRedisStore",
    "Attribution",
    "BackgroundManager",
    "Episode",
    "EpisodicMemory",
    "Fact",
    "HashEmbeddings",
    "MemoryManager",
    "PostgresStore",
    "ProceduralMemory",
    "Procedure",
    "RedisStore",
    "SemanticMemory",
    "StoredItem",
    "WorkingMemory",
    "create_manage_memory_tool",
    "create_memory_tools",
    "create_search_memory_tool",
    "embedded_dsn",
    "embedded_store",
    "to_context",
]
__all__ += errors.__all__
