"""Property tests: random operation sequences agree with the reference model, sync and async."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import BaseStore

from tests.contract.model import Model
from tests.contract.operations import PROPERTY, observe, operations
from tests.stores import AsyncStoreFactory, StoreFactory, ours_only

pytestmark = ours_only("the model encodes our semantics, which InMemoryStore does not share")


def test_random_sequences_match_model(make_store: StoreFactory, backend: str) -> None:
    store: BaseStore = make_store()

    @PROPERTY
    @given(st.data())
    def run(data: st.DataObject) -> None:
        root = uuid.uuid4().hex
        model = Model()
        for op in data.draw(st.lists(operations(root), min_size=1, max_size=25)):
            (result,) = store.batch([op])
            assert observe(result) == model.apply(op), op

    run()


async def test_random_sequences_match_model_async(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await make_astore()
    loop = asyncio.get_running_loop()

    @PROPERTY
    @given(st.data())
    def run(data: st.DataObject) -> None:
        root = uuid.uuid4().hex
        model = Model()
        for op in data.draw(st.lists(operations(root), min_size=1, max_size=25)):
            (result,) = asyncio.run_coroutine_threadsafe(store.abatch([op]), loop).result()
            assert observe(result) == model.apply(op), op

    await asyncio.to_thread(run)
