"""Exceptions raised by langmem_adapters stores and memory tiers.

Every error caused by bad input subclasses ``ValueError`` or ``TypeError`` so callers that
already catch those keep working, and names the offending part of the request.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError

__all__ = [
    "ConcurrentWriteError",
    "EmbeddingDimensionError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "NonJSONValueError",
    "StoreConnectionError",
    "StoreError",
]


class StoreError(Exception):
    """Base class for failures of a store that are not caused by bad input."""


class InvalidFilterError(ValueError):
    """A search filter is malformed: unknown operator, wrong operand type or bad path."""


class InvalidValueError(ValueError):
    """An item value cannot be stored as JSON (NaN, infinity, a non-string key...)."""


class NonJSONValueError(TypeError):
    """An item value holds an object that JSON cannot represent (a set, a datetime...)."""


class EmbeddingDimensionError(ValueError):
    """An embedding function returned unusable vectors: a size other than ``IndexConfig.dims``, the
    wrong count, or NaN/infinite values."""


class StoreConnectionError(StoreError, ConnectionError):
    """The connection to the server broke while a batch was in flight.

    The batch ran in one transaction, so it was applied whole or not at all; only when the connection
    dropped during the commit itself can the caller not know which. The store reconnects on its next
    call; re-running a batch of puts and deletes is safe (``put_if_absent`` should re-check with ``get``).
    """


class ConcurrentWriteError(StoreError):
    """Another writer changed the record first; re-read and retry."""
