"""``store.as_retriever(prefix)``: LangChain's own standard retriever tests on every backend, the
documents' content and metadata, sync and async, ``create_retriever_tool`` and an LCEL chain, the
ranking of the store's own search (hybrid too), and bad arguments refused up front."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import create_retriever_tool
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langgraph.store.base import BaseStore

from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidFilterError,
    InvalidMemoryQueryError,
    InvalidNamespaceError,
    MemoryTypeError,
)
from langmem_adapters.views import StoreRetriever
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index

STORES = ["postgres", "redis-qe", "redis-plain"]
FACTS = [
    ("tea", "Ada drinks green tea every morning", "food"),
    ("coffee", "Bob drinks black coffee", "food"),
    ("cat", "Ada has a cat named Turing", "pets"),
    ("bike", "Ada rides a bike to work", "travel"),
    ("train", "Bob takes the train on Fridays", "travel"),
]


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _load(store: BaseStore) -> tuple[str, ...]:
    """The facts in a fresh namespace (two sub-namespaces); returns its prefix."""
    prefix = ("docs", uuid.uuid4().hex[:8])
    for key, text, topic in FACTS:
        store.put((*prefix, topic), key, {"text": text, "topic": topic})
    return prefix


class TestStandardRetriever(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _store(self, make_store: StoreFactory) -> None:
        self.store = make_store(index=hash_index(fields=["text"]))
        self.prefix = _load(self.store)

    @property
    def retriever_constructor(self) -> Callable[..., StoreRetriever]:  # type: ignore[override]
        return lambda **params: self.store.as_retriever(self.prefix, **params)  # type: ignore[attr-defined]

    @property
    def retriever_query_example(self) -> str:
        return "what does Ada drink"


def test_documents_carry_text_and_metadata(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    prefix = _load(store)
    docs = store.as_retriever(prefix, k=2).invoke("green tea")  # type: ignore[attr-defined]
    assert docs[0].page_content == "Ada drinks green tea every morning"
    meta = docs[0].metadata
    assert meta["namespace"] == [*prefix, "food"] and meta["key"] == "tea"
    assert isinstance(meta["score"], float)
    item = store.get((*prefix, "food"), "tea")
    assert item is not None
    assert meta["created_at"] == item.created_at.isoformat()
    assert meta["updated_at"] == item.updated_at.isoformat()


def test_ranks_as_the_store_searches(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"], hybrid=True))
    prefix = _load(store)
    for query in ("Turing the cat", "who drinks coffee", "train Fridays"):
        hits = store.search(prefix, query=query, limit=3)
        docs = store.as_retriever(prefix, k=3).invoke(query)  # type: ignore[attr-defined]
        assert [d.metadata["key"] for d in docs] == [h.key for h in hits]
        assert [d.metadata["score"] for d in docs] == [h.score for h in hits]


def test_filter_k_and_content_fields(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    prefix = _load(store)
    travel = store.as_retriever(prefix, filter={"topic": "travel"}, k=10)  # type: ignore[attr-defined]
    assert sorted(d.metadata["key"] for d in travel.invoke("work")) == ["bike", "train"]
    assert [d.metadata["key"] for d in travel.invoke("work", filter={"topic": "pets"})] == ["cat"]
    topics = store.as_retriever(prefix, content_fields=["topic"], k=5)  # type: ignore[attr-defined]
    assert {d.page_content for d in topics.invoke("x")} == {"food", "pets", "travel"}
    whole = make_store()  # no index: the whole value is the content
    whole.put(("w",), "k", {"text": "hello"})
    [doc] = whole.as_retriever(("w",)).invoke("hello")  # type: ignore[attr-defined]
    assert doc.page_content == '{"text": "hello"}' and doc.metadata["score"] is None


async def test_async_stores(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=hash_index(fields=["text"]))
    prefix = ("docs", uuid.uuid4().hex[:8])
    for key, text, topic in FACTS:
        await store.aput((*prefix, topic), key, {"text": text, "topic": topic})
    retriever = store.as_retriever(prefix, k=2)  # type: ignore[attr-defined]
    docs = await retriever.ainvoke("green tea")
    hits = await store.asearch(prefix, query="green tea", limit=2)
    assert [d.metadata["key"] for d in docs] == [h.key for h in hits]


def test_retriever_tool_and_lcel_chain(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    prefix = _load(store)
    retriever = store.as_retriever(prefix, k=1)  # type: ignore[attr-defined]
    tool = create_retriever_tool(retriever, "memories", "Search the user's memories.")
    assert "green tea" in tool.invoke({"query": "green tea"})

    def joined(docs: list[Document]) -> str:
        return " | ".join(d.page_content for d in docs)

    chain = retriever | RunnableLambda(joined)
    assert chain.invoke("green tea") == "Ada drinks green tea every morning"
    assert chain.batch(["green tea", "black coffee"])[1] == "Bob drinks black coffee"


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"k": 0}, InvalidMemoryQueryError),
        ({"k": "3"}, MemoryTypeError),
        ({"filter": {"$or": []}}, InvalidFilterError),
    ],
)
def test_bad_arguments_refused_up_front(
    make_store: StoreFactory, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    store = make_store()
    with pytest.raises(error):
        store.as_retriever(("docs",), **kwargs)  # type: ignore[attr-defined]
    with pytest.raises(InvalidNamespaceError):
        store.as_retriever(("bad.label",))  # type: ignore[attr-defined]
    retriever = store.as_retriever(("docs",))  # type: ignore[attr-defined]
    with pytest.raises(InvalidMemoryQueryError, match="at least 1"):
        retriever.invoke("x", k=0)
    with pytest.raises(InvalidArgumentError, match="takes k and filter"):
        retriever.invoke("x", limit=3)
