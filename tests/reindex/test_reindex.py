"""Embedding identity and ``reindex`` on every backend of the shared fixtures, sync and async.

A store opened with another embedder than its vectors were made with fails before it writes or
searches; ``reindex`` moves a store to a new model page by page while a concurrent searcher keeps
getting answers (the old model's until the switch, the new one's after), resumes after an
interruption without embedding any text twice, and handles items without text, with a TTL and expired.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from langmem_adapters import (
    AsyncPostgresStore,
    AsyncRedisStore,
    EmbeddingMismatchError,
    HashEmbeddings,
    PostgresStore,
    RedisStore,
)
from langmem_adapters.core.identity import PROBES
from tests.stores import DIMS, AsyncStoreFactory, StoreFactory, ours_only
from tests.waiting import wait_until

pytestmark = ours_only("InMemoryStore has no embedding identity or reindex")

QUERY = "topic 5 number"


class Salted(HashEmbeddings):
    """Another "model" of the same size: the words hashed with two extra words."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return super().embed_documents([f"salt {t} pepper" for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return super().embed_query(f"salt {text} pepper")


class Counting(Embeddings):
    """An embedder that counts the item texts it embeds (the identity probes left out)."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += [t for t in texts if t not in PROBES]
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _index(embed: Embeddings, dims: int = DIMS) -> dict[str, Any]:
    return {"dims": dims, "embed": embed, "fields": ["text"]}


def _reopen(store: Any, index: dict[str, Any]) -> Any:
    """Another store instance on the same data (connection and prefix), with ``index``."""
    if isinstance(store, (PostgresStore, AsyncPostgresStore)):
        return type(store)(store.conn, index=index, table_prefix=store.tables.prefix)  # type: ignore[arg-type]
    assert isinstance(store, (RedisStore, AsyncRedisStore))
    return type(store)(store.client, index=index, prefix=store.keys.prefix, mode=store.mode)  # type: ignore[arg-type]


def _fill(store: BaseStore, n: int) -> None:
    """``n`` items in three namespaces, every text twice (so half of them repeat a text)."""
    for start in range(0, n, 100):
        for i in range(start, min(n, start + 100)):
            store.put(
                ("docs", str(i % 3)), f"k{i:05d}", {"text": f"item {i // 2} on topic {i // 2 % 17}"}
            )


def _answer(store: BaseStore) -> tuple[tuple[str, float], ...]:
    return tuple(
        (r.key, round(r.score or 0.0, 4)) for r in store.search(("docs",), query=QUERY, limit=5)
    )


@pytest.mark.parametrize("dims", [DIMS, 32])
def test_other_embedder_fails_before_writing_or_searching(
    make_store: StoreFactory, backend: str, dims: int
) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 10)
    other = _reopen(store, _index(Salted(dims), dims))
    with pytest.raises(EmbeddingMismatchError) as err:
        other.search(("docs",), query=QUERY)
    assert "HashEmbeddings(dims=64)" in str(err.value)
    assert f"Salted(dims={dims})" in str(err.value)
    with pytest.raises(EmbeddingMismatchError):
        other.put(("docs",), "new", {"text": "a new item"})
    assert store.get(("docs",), "new") is None
    assert other.get(("docs", "0"), "k00000") is not None  # plain reads touch no vector
    # The original embedder still works, and the same model in another instance too.
    assert _reopen(store, _index(HashEmbeddings(DIMS))).search(("docs",), query=QUERY)


def test_reindex_moves_the_store_while_searches_keep_answering(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 500)
    stale = _reopen(store, _index(HashEmbeddings(DIMS)))
    old = _answer(store)
    assert _answer(stale) == old
    seen: list[tuple[tuple[str, float], ...]] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            seen.append(_answer(store))

    searcher = threading.Thread(target=search)
    searcher.start()
    progress: list[tuple[int, int]] = []
    try:
        wait_until(lambda: len(seen) >= 3, what="searches before the reindex")
        assert (
            store.reindex(
                Salted(DIMS), page_size=100, progress=lambda d, t: progress.append((d, t))
            )
            == 500
        )
        after = len(seen) + 1  # the search running as the reindex returned may be on either side
        wait_until(lambda: len(seen) >= after + 3, what="searches after the reindex")
    finally:
        stop.set()
        searcher.join()
    new = _answer(store)
    assert new != old
    assert progress[0] == (0, 500) and progress[-1] == (500, 500) and len(progress) == 6
    # Every answer is one model's; once the new one's appeared, the old one's never came back.
    assert set(seen) <= {old, new}, set(seen) - {old, new}
    first_new = seen.index(new)
    assert seen[0] == old and old not in seen[first_new:]
    assert _answer(_reopen(store, _index(Salted(DIMS)))) == new
    with pytest.raises(EmbeddingMismatchError):
        _reopen(store, _index(HashEmbeddings(DIMS))).search(("docs",), query=QUERY)
    if backend == "postgres":  # the switched-away table fails its next batch, which checks again
        with pytest.raises(EmbeddingMismatchError):
            stale.search(("docs",), query=QUERY)


def test_reindex_to_another_size_and_after_a_mismatch(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 50)
    other = _reopen(store, _index(HashEmbeddings(32), 32))
    with pytest.raises(EmbeddingMismatchError):
        other.search(("docs",), query=QUERY)
    assert other.reindex() == 50  # the way out: re-embed with the store's own (new) embedder
    reference = HashEmbeddings(32)
    top = other.search(("docs",), query="item 7 on topic 7", limit=1)[0]
    assert top.value["text"] == "item 7 on topic 7" and top.key in ("k00014", "k00015")
    expected = sum(
        a * b
        for a, b in zip(
            reference.embed_query("item 7 on topic 7"), reference.embed_query(top.value["text"])
        )
    )
    assert top.score == pytest.approx(expected, abs=1e-3)
    with pytest.raises(EmbeddingMismatchError):
        _reopen(store, _index(HashEmbeddings(DIMS))).search(("docs",), query=QUERY)


def test_reindex_resumes_and_embeds_each_text_once(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 500)
    counting = Counting(Salted(DIMS))

    def interrupt(done: int, total: int) -> None:
        if done == 200:
            raise KeyboardInterrupt("stopped mid-way")

    with pytest.raises(KeyboardInterrupt):
        store.reindex(counting, page_size=100, progress=interrupt)
    before = list(counting.texts)
    assert 0 < len(before) <= 200  # two pages of items, no text twice
    old = _answer(store)
    assert _answer(_reopen(store, _index(HashEmbeddings(DIMS)))) == old  # not switched yet
    progress: list[tuple[int, int]] = []
    assert (
        store.reindex(counting, page_size=100, progress=lambda d, t: progress.append((d, t))) == 500
    )
    assert progress[0] == (200, 500)
    # 500 items, 250 distinct texts: each embedded exactly once over both runs.
    assert sorted(counting.texts) == sorted(
        {f"item {i // 2} on topic {i // 2 % 17}" for i in range(500)}
    )
    assert _answer(store) == _answer(_reopen(store, _index(Salted(DIMS))))


def test_reindex_items_without_text_with_ttl_and_expired(
    make_store: StoreFactory, backend: str
) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)), ttl={"default_ttl": None})
    store.put(("docs",), "plain", {"other": 1})
    store.put(("docs",), "lasting", {"text": "a lasting item on topic 5"}, ttl=60)
    store.put(("docs",), "brief", {"text": "a brief item on topic 5"}, ttl=0.002)
    store.put(("docs",), "forever", {"text": "a permanent item on topic 5"})
    expires = {i.key: i.expires_at for i in store.iter_items(("docs",))}
    time.sleep(0.3)
    counting = Counting(Salted(DIMS))
    assert store.reindex(counting) == 3  # the expired item is neither counted nor embedded
    assert sorted(counting.texts) == ["a lasting item on topic 5", "a permanent item on topic 5"]
    items = {i.key: i for i in store.iter_items(("docs",))}
    assert set(items) == {"plain", "lasting", "forever"}
    # The TTL is neither lost nor refreshed.
    assert items["lasting"].expires_at == expires["lasting"]
    assert items["forever"].expires_at is None
    hits = store.search(("docs",), query="item on topic 5", limit=10)
    assert [h.key for h in hits][:2] in (["forever", "lasting"], ["lasting", "forever"])
    assert "plain" not in [h.key for h in hits if h.score is not None and h.score > 0.05]


async def test_areindex_with_a_concurrent_searcher(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store: Any = await make_astore(index=_index(HashEmbeddings(DIMS)))
    for start in range(0, 300, 100):
        await store.abatch(
            [
                PutOp(
                    ("docs", str(i % 3)),
                    f"k{i:05d}",
                    {"text": f"item {i // 2} on topic {i // 2 % 17}"},
                )
                for i in range(start, start + 100)
            ]
        )

    async def answer() -> tuple[tuple[str, float], ...]:
        hits = await store.asearch(("docs",), query=QUERY, limit=5)
        return tuple((r.key, round(r.score or 0.0, 4)) for r in hits)

    old = await answer()
    seen: list[tuple[tuple[str, float], ...]] = []
    done = asyncio.Event()

    async def search() -> None:
        while not done.is_set():
            seen.append(await answer())

    task = asyncio.create_task(search())
    counting = Counting(Salted(DIMS))
    try:
        assert await store.areindex(counting, page_size=50) == 300
    finally:
        done.set()
        await task
    new = await answer()
    assert new != old and set(seen) <= {old, new} and seen and seen[0] == old
    assert len(counting.texts) == 150
    with pytest.raises(EmbeddingMismatchError):
        await _reopen(store, _index(HashEmbeddings(DIMS))).asearch(("docs",), query=QUERY)


@pytest.mark.slow
def test_reindex_10k_items(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 10_000)
    old = _answer(store)
    assert store.reindex(Salted(DIMS)) == 10_000
    assert _answer(store) != old
    assert _answer(store) == _answer(_reopen(store, _index(Salted(DIMS))))


def test_writes_during_a_reindex_are_caught_up(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 300)

    def write(done: int, total: int) -> None:
        if done == 100:  # behind the position: only the switch's catch-up can see these
            store.put(("docs", "0"), "k00000", {"text": "zebra crossing at night"})
            store.put(("docs", "0"), "a-late", {"text": "a late arrival about zebras"})
            store.delete(("docs", "1"), "k00001")

    assert store.reindex(Salted(DIMS), page_size=100, progress=write) == 299  # one deleted
    for text, key in [
        ("zebra crossing at night", "k00000"),
        ("a late arrival about zebras", "a-late"),
    ]:
        hit = store.search(("docs",), query=text, limit=1)[0]
        assert hit.key == key and hit.score == pytest.approx(
            1.0, abs=1e-3
        )  # the new model's vector
    assert store.get(("docs", "1"), "k00001") is None
    assert "k00001" not in [h.key for h in store.search(("docs",), query=QUERY, limit=50)]
    assert _answer(store) == _answer(_reopen(store, _index(Salted(DIMS))))


def test_a_stale_store_fails_at_its_next_identity_refresh(
    make_store: StoreFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: Any = make_store(index=_index(HashEmbeddings(DIMS)))
    _fill(store, 20)
    stale = _reopen(store, _index(HashEmbeddings(DIMS)))
    assert stale.search(("docs",), query=QUERY)
    store.reindex(Salted(DIMS))
    monkeypatch.setattr("langmem_adapters.core.identity.REFRESH_SECONDS", 0.0)
    with pytest.raises(EmbeddingMismatchError, match="Salted"):
        stale.put(("docs",), "new", {"text": "written with the old model"})
    assert store.get(("docs",), "new") is None
