"""Every exception this package raises, under one root: :class:`LangmemAdaptersError`.

Errors caused by bad input also subclass ``ValueError`` or ``TypeError`` (and a lost server
``ConnectionError``), so callers that already catch those keep working; each names the offending
part of the request. This module is each error's one home; ``langmem_adapters`` re-exports them
all (``from langmem_adapters import StoreError``). The packages that used to re-export the errors
they raise (``langmem_adapters.memory.ConcurrentWriteError``...) still resolve those names, with a
``DeprecationWarning`` (:mod:`langmem_adapters.compat`).
"""

from __future__ import annotations

import asyncio

from langgraph.store.base import InvalidNamespaceError as _LangGraphNamespaceError

__all__ = [
    "CLIError",
    "ConcurrentWriteError",
    "EmbeddingDimensionError",
    "EmbeddingMismatchError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidFilterError",
    "InvalidMemoryQueryError",
    "InvalidMemoryWriteError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidSettingError",
    "InvalidValueError",
    "LangmemAdaptersError",
    "MemoryToolConfigError",
    "MemoryTypeError",
    "MissingExtraError",
    "NamespaceTemplateError",
    "NonJSONValueError",
    "RecordNotFoundError",
    "SearchTimeoutError",
    "ServerConfigError",
    "ServerRefusedError",
    "SettingUnavailableError",
    "StoreConnectionError",
    "StoreError",
    "TransientServerError",
    "UnsupportedServerError",
    "WrongLoopError",
]


#: The names of the errors a store (PostgreSQL or Redis) can raise.
STORE_ERRORS = (
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
)


class LangmemAdaptersError(Exception):
    """The root of every error of this package: ``except LangmemAdaptersError`` catches them all."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name if it has none), for one-line
    reports such as the CLI's ``error:`` and a reader's "cannot read" (not in ``__all__``: it is a
    helper, not an error)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


# --------------------------------------------------------------------------- bad input to a store


class InvalidArgumentError(LangmemAdaptersError, ValueError):
    """An argument has a usable type but a value out of range (a negative ``limit``, a bad option)."""


class InvalidArgumentTypeError(LangmemAdaptersError, TypeError):
    """An argument has the wrong type (a ``limit`` that is not an integer, an index that is a string)."""


class InvalidNamespaceError(LangmemAdaptersError, _LangGraphNamespaceError):
    """A namespace is malformed; also langgraph's ``InvalidNamespaceError``, so either catch works."""


class InvalidFilterError(LangmemAdaptersError, ValueError):
    """A search filter is malformed: unknown operator, wrong operand type or bad path."""


class InvalidValueError(LangmemAdaptersError, ValueError):
    """An item value cannot be stored as JSON (NaN, infinity, a non-string key...)."""


class NonJSONValueError(LangmemAdaptersError, TypeError):
    """An item value holds an object that JSON cannot represent (a set, a datetime...)."""


class InvalidRecordError(LangmemAdaptersError, ValueError):
    """A record given to ``restore`` (or read from an export) is malformed: missing fields, a naive
    timestamp, a non-positive TTL."""


class EmbeddingDimensionError(LangmemAdaptersError, ValueError):
    """An embedding function returned unusable vectors: a size other than ``IndexConfig.dims``, the
    wrong count, or NaN/infinite values."""


class EmbeddingMismatchError(LangmemAdaptersError, ValueError):
    """A store was opened with an embedder other than the one its vectors were made with (another
    model, or another size): searching or writing would mix incompatible vectors. The message names
    both; ``reindex()`` re-embeds the store with the new one."""


# --------------------------------------------------------------------------- store failures


class StoreError(LangmemAdaptersError):
    """Base class for failures of a store that are not caused by bad input."""


class StoreConnectionError(StoreError, ConnectionError):
    """The connection to the server broke while a batch was in flight.

    The batch ran in one transaction, so it was applied whole or not at all; only when the connection
    dropped during the commit itself can the caller not know which. The store reconnects on its next
    call; re-running a batch of puts and deletes is safe (``put_if_absent`` should re-check with ``get``).
    """


class ServerRefusedError(StoreError):
    """The server answered a request with an error that is neither bad input (checked before any
    I/O) nor a lost connection: a constraint or permission of the database, a full disk, Redis out
    of memory, a statement timeout... On PostgreSQL a batch's writes run in one transaction, which
    the error rolled back. The message names the server's reply; the driver's exception is
    ``__cause__``."""


class SearchTimeoutError(ServerRefusedError):
    """A Redis Query Engine search ran past the server's query timeout (the search module's
    ``TIMEOUT``, 500 ms by default): with ``ON_TIMEOUT return`` (the default) the server answers the
    rows found so far, which the store refuses to return as the complete answer. Raise the server's
    ``TIMEOUT`` or narrow the search (a namespace prefix, a filter, a smaller ``limit``)."""

    def __init__(self, why: str) -> None:
        """``why``: the server's warning (``Timeout limit was reached``)."""
        self.why = why
        super().__init__(
            f"a Query Engine search ran past the Redis server's query timeout ({why}) and the "
            "server answered only the rows found so far; the store returns no partial result: "
            "raise the search module's TIMEOUT (FT.CONFIG SET TIMEOUT <ms>, or its module "
            "argument) or narrow the search (a namespace prefix, a filter, a smaller limit)"
        )

    def __reduce__(self) -> tuple[type[SearchTimeoutError], tuple[str]]:
        """Pickled with the server's warning, so that it unpickles with the same message."""
        return (type(self), (self.why,))


class TransientServerError(ServerRefusedError):
    """The server rolled a batch back for a reason that passes (a deadlock or serialization failure
    with a concurrent writer, a vector table a concurrent ``reindex`` switched away): nothing was
    applied and running it again is safe; the store already retried it a few times."""


class UnsupportedServerError(StoreError, RuntimeError):
    """The server cannot hold a store as asked: Redis older than 6.2, or ``mode="query_engine"`` on a
    server without the Query Engine and JSON modules."""


class ConcurrentWriteError(StoreError):
    """Another writer changed the record first; re-read and retry."""


class WrongLoopError(LangmemAdaptersError, asyncio.InvalidStateError):
    """A sync method of an async store was called where it cannot run: on the store's own event
    loop (it would deadlock), or before the store has run on any loop; use the async methods."""


class MissingExtraError(LangmemAdaptersError, ImportError):
    """An optional feature needs a package that is not installed; the message names the extra to
    install (``pip install 'langmem-adapters[embedded]'``)."""


# --------------------------------------------------------------------------- memory tiers


class RecordNotFoundError(LangmemAdaptersError, LookupError):
    """The record a write refers to does not exist under this tier's namespace root."""


class InvalidMemoryWriteError(LangmemAdaptersError, ValueError):
    """A write breaks a tier rule (empty text, a future episode, a window that ends before it starts...)."""


class InvalidMemoryQueryError(LangmemAdaptersError, ValueError):
    """A read asks for something impossible (``k < 1``, ``since`` after ``until``...)."""


class MemoryTypeError(LangmemAdaptersError, TypeError):
    """An argument has the wrong type, e.g. a naive ``datetime`` or a non-string text."""


# --------------------------------------------------------------------------- memory tools


class MemoryToolConfigError(LangmemAdaptersError, RuntimeError):
    """The tool cannot run as configured (no store available); a set-up error, not the model's."""


class NamespaceTemplateError(LangmemAdaptersError, ValueError):
    """A namespace template field has no value (or an unusable one) in the context or config."""


# --------------------------------------------------------------------------- locations and settings


class InvalidSettingError(LangmemAdaptersError, ValueError):
    """A store URL or setting (:mod:`langmem_adapters.settings`) is malformed: an unknown scheme, a
    bad ``table_prefix``, ``hash:0``; the message names the setting."""


class SettingUnavailableError(LangmemAdaptersError, RuntimeError):
    """A well-formed setting names something that cannot be used here: an embedded PostgreSQL that
    does not start, a LangChain provider that is not installed or refuses (a missing API key)."""


# --------------------------------------------------------------------------- command line


class CLIError(LangmemAdaptersError):
    """A problem the CLI reports as one ``error:`` line; ``code`` is the exit status (2 usage, 1
    runtime)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- LangGraph server


class ServerConfigError(InvalidSettingError):
    """An environment variable of :func:`langmem_adapters.server.generate_store` (or langgraph.json's
    store section) has a bad value, or names something unusable; the message names the variable,
    and the server fails at start instead of serving a wrong store."""
