"""The errors a store of this package can raise, re-exported (they are defined in
:mod:`langmem_adapters.errors`) so that each backend package offers them with one star import."""

from langmem_adapters.errors import (
    EmbeddingDimensionError,
    EmbeddingMismatchError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidRecordError,
    InvalidValueError,
    NonJSONValueError,
    ServerRefusedError,
    StoreConnectionError,
    StoreError,
    TransientServerError,
    UnsupportedServerError,
    WrongLoopError,
)

__all__ = [
    "EmbeddingDimensionError",
    "EmbeddingMismatchError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "NonJSONValueError",
    "ServerRefusedError",
    "StoreConnectionError",
    "StoreError",
    "TransientServerError",
    "UnsupportedServerError",
    "WrongLoopError",
]
