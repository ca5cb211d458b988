"""``store.as_byte_store(namespace)``: LangChain's own standard ``ByteStore`` tests (sync and async)
on every backend, ``CacheBackedEmbeddings`` caching through it, and the namespace being the whole
of it (items of other namespaces are not its keys)."""

from __future__ import annotations

import uuid

import pytest
from langchain_classic.embeddings import CacheBackedEmbeddings
from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentTypeError, InvalidNamespaceError
from langmem_adapters.views import StoreByteStore
from tests.stores import AsyncStoreFactory, StoreFactory

STORES = ["postgres", "redis-qe", "redis-plain"]


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _namespace() -> tuple[str, ...]:
    return ("cache", uuid.uuid4().hex[:8])


def _byte_store(store: BaseStore) -> StoreByteStore:
    return store.as_byte_store(_namespace())  # type: ignore[attr-defined,no-any-return]


class TestSyncByteStore(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, make_store: StoreFactory) -> ByteStore:
        return _byte_store(make_store())

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00\xffbar", "bäz".encode()


class TestAsyncByteStore(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    async def kv_store(self, make_astore: AsyncStoreFactory) -> ByteStore:
        return _byte_store(await make_astore())

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00\xffbar", "bäz".encode()


class CountingEmbeddings(Embeddings):
    """A small deterministic embedder that counts the texts it embeds."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_cache_backed_embeddings(make_store: StoreFactory) -> None:
    inner = CountingEmbeddings()
    cache = _byte_store(make_store())
    cached = CacheBackedEmbeddings.from_bytes_store(
        inner, cache, namespace="counting", key_encoder="sha256"
    )
    first = cached.embed_documents(["green tea", "black coffee"])
    again = cached.embed_documents(["black coffee", "green tea", "water"])
    assert inner.embedded == ["green tea", "black coffee", "water"]
    assert again[:2] == [first[1], first[0]]
    assert len(list(cache.yield_keys(prefix="counting"))) == 3


async def test_cache_backed_embeddings_async(make_astore: AsyncStoreFactory) -> None:
    inner = CountingEmbeddings()
    cache = _byte_store(await make_astore())
    cached = CacheBackedEmbeddings.from_bytes_store(
        inner, cache, namespace="counting", key_encoder="sha256"
    )
    first = await cached.aembed_documents(["green tea", "black coffee"])
    again = await cached.aembed_documents(["black coffee", "green tea"])
    assert inner.embedded == ["green tea", "black coffee"]
    assert again == [first[1], first[0]]


def test_only_the_namespace_itself(make_store: StoreFactory) -> None:
    store = make_store()
    ns = _namespace()
    bytes_store = store.as_byte_store(ns)  # type: ignore[attr-defined]
    store.put((*ns, "below"), "deeper", {"bytes": "AA=="})
    store.put((ns[0],), "above", {"bytes": "AA=="})
    bytes_store.mset([("k1", b"1"), ("k2", b"2")])
    assert sorted(bytes_store.yield_keys()) == ["k1", "k2"]
    assert bytes_store.mget(["deeper", "k2"]) == [None, b"2"]


def test_bad_input_is_refused_and_writes_nothing(make_store: StoreFactory) -> None:
    store = make_store()
    bytes_store = _byte_store(store)
    with pytest.raises(InvalidArgumentTypeError, match="holds bytes"):
        bytes_store.mset([("a", b"1"), ("b", "not bytes")])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentTypeError):
        bytes_store.mset([("a", b"1"), (7, b"2")])  # type: ignore[list-item]
    assert list(bytes_store.yield_keys()) == []
    with pytest.raises(InvalidNamespaceError):
        store.as_byte_store(("bad.label",))  # type: ignore[attr-defined]
