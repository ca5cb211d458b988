"""langmem_adapters: durable, fast, correct long-term memory for LangGraph agents.

Stores (drop-in ``BaseStore``s), memory tiers over any store, and agent memory tools.
"""

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import (
    ConcurrentWriteError,
    EmbeddingDimensionError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidValueError,
    NonJSONValueError,
    StoreConnectionError,
    StoreError,
)
from langmem_adapters.memory import (
    Attribution,
    Episode,
    EpisodicMemory,
    Fact,
    InvalidMemoryQueryError,
    InvalidMemoryWriteError,
    MemoryTypeError,
    ProceduralMemory,
    Procedure,
    RecordNotFoundError,
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
    MemoryToolConfigError,
    NamespaceTemplateError,
    create_manage_memory_tool,
    create_memory_tools,
    create_search_memory_tool,
)

__all__ = [
    "AsyncPostgresStore",
    "AsyncRedisStore",
    "Attribution",
    "ConcurrentWriteError",
    "EmbeddingDimensionError",
    "Episode",
    "EpisodicMemory",
    "Fact",
    "HashEmbeddings",
    "InvalidFilterError",
    "InvalidMemoryQueryError",
    "InvalidMemoryWriteError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "MemoryToolConfigError",
    "MemoryTypeError",
    "NamespaceTemplateError",
    "NonJSONValueError",
    "PostgresStore",
    "ProceduralMemory",
    "Procedure",
    "RecordNotFoundError",
    "RedisStore",
    "SemanticMemory",
    "StoreConnectionError",
    "StoreError",
    "WorkingMemory",
    "create_manage_memory_tool",
    "create_memory_tools",
    "create_search_memory_tool",
    "embedded_dsn",
    "embedded_store",
    "to_context",
]
