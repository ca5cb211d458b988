"""langmem_adapters: durable, fast, correct long-term memory for LangGraph agents."""

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import (
    ConcurrentWriteError,
    EmbeddingDimensionError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidValueError,
    NonJSONValueError,
    StoreError,
)

__all__ = [
    "ConcurrentWriteError",
    "EmbeddingDimensionError",
    "HashEmbeddings",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "NonJSONValueError",
    "StoreError",
]
