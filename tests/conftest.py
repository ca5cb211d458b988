"""Shared fixtures: every store of this package (and InMemoryStore as a reference) behind one factory.

``make_store(index=None, ttl=None)`` returns a fresh, empty sync store of the parametrised kind;
``make_astore`` is its async twin. Tests that need TTL skip on stores without TTL support.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_adapters.embeddings import HashEmbeddings

DIMS = 64

StoreFactory = Callable[..., BaseStore]


def hash_index(dims: int = DIMS, **extra: Any) -> dict[str, Any]:
    """An IndexConfig with the deterministic offline embedder."""
    return {"dims": dims, "embed": HashEmbeddings(dims), **extra}


BACKENDS = ["memory"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str) -> Iterator[StoreFactory]:
    """Factory for fresh sync stores of the parametrised backend."""

    def factory(*, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None) -> BaseStore:
        if backend == "memory":
            if ttl is not None:
                pytest.skip("InMemoryStore has no TTL")
            return InMemoryStore(index=index)  # type: ignore[arg-type]
        raise AssertionError(backend)

    yield factory


@pytest.fixture
async def make_astore(backend: str) -> AsyncIterator[StoreFactory]:
    """Factory for fresh async-capable stores of the parametrised backend."""

    def factory(*, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None) -> BaseStore:
        if backend == "memory":
            if ttl is not None:
                pytest.skip("InMemoryStore has no TTL")
            return InMemoryStore(index=index)  # type: ignore[arg-type]
        raise AssertionError(backend)

    yield factory
