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

__all__ = [
    "AsyncPostgresStore",
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
    "MemoryTypeError",
    "NonJSONValueError",
    "PostgresStore",
    "ProceduralMemory",
    "Procedure",
    "RecordNotFoundError",
    "SemanticMemory",
    "StoreConnectionError",
    "StoreError",
    "WorkingMemory",
    "embedded_dsn",
    "embedded_store",
    "to_context",
]
