"""What the store tests share: the backends, the offline index, the store factory types.

``BACKENDS`` are every store a test may run against: langgraph's ``InMemoryStore`` (``"memory"``, the
reference) and ours. A test that needs what only our stores have (TTL, ``put_if_absent``, typed
filters, ...) is marked ``@ours_only("why")``: it is then parametrised over ``OURS`` alone, so it is
never collected for InMemoryStore and never skipped at run time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest
from langgraph.store.base import BaseStore

from langmem_adapters.embeddings import HashEmbeddings

DIMS = 64

StoreFactory = Callable[..., BaseStore]
AsyncStoreFactory = Callable[..., Awaitable[BaseStore]]

OURS = ["postgres", "redis-qe", "redis-plain"]
BACKENDS = ["memory", *OURS]


def ours_only(why: str) -> pytest.MarkDecorator:
    """Run the test (or, as ``pytestmark``, the module) over our stores only; ``why`` says what
    InMemoryStore lacks or does differently. Read by ``pytest_generate_tests`` in conftest.py."""
    return pytest.mark.ours_only(why)


def hash_index(dims: int = DIMS, **extra: Any) -> dict[str, Any]:
    """An IndexConfig with the deterministic offline embedder."""
    return {"dims": dims, "embed": HashEmbeddings(dims), **extra}


def reset_postgres(dsn: str, prefix: str = "langmem") -> None:
    """Empty every table of ours (named ``prefix_*``) on the server at ``dsn``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE %s AND tablename NOT LIKE %s",
                [prefix + "\\_%", "%migrations"],
            )
        ]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)} CASCADE")


def tick() -> datetime:
    """A timestamp strictly between the store writes before and after it (for ``as_of`` and
    history reads): time passing is the point, nothing is waited for."""
    time.sleep(0.02)
    when = datetime.now(timezone.utc)
    time.sleep(0.02)
    return when
