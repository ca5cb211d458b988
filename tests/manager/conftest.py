"""Fixtures of the manager tests: the mode (sync or async) and a store of the backend in it."""

from __future__ import annotations

import pytest
from langgraph.store.base import BaseStore

from tests.stores import AsyncStoreFactory, StoreFactory, hash_index


@pytest.fixture(params=["sync", "async"])
def use_async(request: pytest.FixtureRequest) -> bool:
    """Whether the test runs on the async APIs."""
    return request.param == "async"


@pytest.fixture
async def store(
    use_async: bool, make_store: StoreFactory, make_astore: AsyncStoreFactory
) -> BaseStore:
    """A fresh store of the parametrised backend with the offline embedder, async in async mode."""
    return await make_astore(index=hash_index()) if use_async else make_store(index=hash_index())
