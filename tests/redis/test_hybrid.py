"""Hybrid (lexical + vector) search on Redis, Query Engine and plain mode, sync and async: what the
lexical side finds that vectors miss, the fused order against ``core.hybrid.fuse`` of both sides
computed independently, prefix/filters/TTL/paging, hostile query text, the stored words, and an index
made before hybrid search existed."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langgraph.store.base import BaseStore, PutOp, SearchOp
from redis.cluster import ClusterNode, RedisCluster

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core import refresh
from langmem_adapters.core.bm25 import bm25
from langmem_adapters.core.hybrid import HybridSpec, fuse, words
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.layout import Keys
from langmem_adapters.redis.lexical import MAX_TERMS, Hit, _hit
from tests import servers
from tests.redis.observe import round_trips, server_calls
from tests.stores import AsyncStoreFactory, StoreFactory

MODES = ["redis-qe", "redis-plain"]
IDENTIFIER = "ERR_TLS_CERT_ALTNAME"


def _index(**hybrid: Any) -> dict[str, Any]:
    return {
        "dims": 64,
        "embed": HashEmbeddings(64),
        "fields": ["text"],
        "ann_index_config": {"kind": "flat"},  # exact KNN: the vector side is deterministic
        "hybrid": hybrid or True,
    }


def _notes(seed: int = 7) -> dict[str, str]:
    """150 short notes of random words and one long note holding the identifier once: its vector
    (bag-of-words hashing) is diluted by 60 other words, so vector search ranks it near the end."""
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]

    def note(n: int) -> str:
        return " ".join(rnd.choice(vocab) for _ in range(n))

    notes = {f"d{i:03d}": note(6) for i in range(150)}
    notes["target"] = f"{note(30)} {IDENTIFIER} {note(30)}"
    return notes


def _keys(results: list[Any]) -> list[str]:
    return [r.key for r in results]


def _client(backend: str) -> redis.Redis:
    return redis.Redis.from_url(servers.redis_url(modules=backend == "redis-qe"))


@pytest.fixture
def qe_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    yield client
    client.close()


@pytest.mark.parametrize("backend", MODES)
def test_identifier_found_that_vectors_rank_low(make_store: StoreFactory) -> None:
    hybrid, vector_only = make_store(index=_index()), make_store(index={**_index(), "hybrid": None})
    for store in (hybrid, vector_only):
        for key, text in _notes().items():
            store.put(("notes",), key, {"text": text})
    missed = _keys(vector_only.search(("notes",), query=IDENTIFIER.lower(), limit=10))
    assert "target" not in missed  # the data makes vector search alone miss it
    found = hybrid.search(("notes",), query=f"what is {IDENTIFIER}?", limit=5)
    assert "target" in _keys(found)
    assert all(r.score is not None and r.score > 0 for r in found)


@pytest.mark.parametrize("backend", MODES)
async def test_identifier_found_async(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=_index())
    await store.abatch([])
    for key, text in _notes().items():
        await store.aput(("notes",), key, {"text": text})
    found = await store.asearch(("notes",), query=IDENTIFIER, limit=5)
    assert "target" in _keys(found)


def _corpus() -> dict[str, str]:
    """Notes where the query words occur with different counts and note lengths (distinct BM25
    scores), among notes without them."""
    rnd = random.Random(3)
    filler = [f"f{i}" for i in range(50)]
    out = {}
    for i in range(40):
        picked = ["alpha"] * (i % 4) + ["beta"] * (i % 3) + rnd.sample(filler, 3 + i % 7)
        rnd.shuffle(picked)
        out[f"k{i:02d}"] = " ".join(picked)
    return out


def _lexical_ranking(
    backend: str, store: BaseStore, query: str, texts: dict[str, str]
) -> list[tuple[str, float]]:
    """The lexical ranking computed without the store's search, with each score: the server's own
    BM25STD query on the items index (Query Engine), or ``core.bm25`` over the notes' words
    (plain); the items scoring at least ``HybridSpec().floor`` of the best."""
    terms = list(dict.fromkeys(words(query)))
    if backend == "redis-plain":
        scores = bm25(terms, [words(t) for t in texts.values()])
        return _floor(sorted((-s, k) for s, k in zip(scores, texts) if s > 0))
    return _floor(_server_ranking(store, terms))


def _server_ranking(store: BaseStore, terms: list[str]) -> list[tuple[float, str]]:
    """``(-score, key)`` of every item the server's own BM25STD query of the words alone (no
    namespace clause) matches, best first (Query Engine)."""
    assert isinstance(store, RedisStore)
    client = redis.Redis.from_url(servers.redis_url(modules=True), protocol=2)
    reply = client.execute_command(
        "FT.SEARCH",
        f"{store.keys.prefix}:items",
        f"@w:({'|'.join(terms)})",
        "NOCONTENT",
        "WITHSCORES",
        "SCORER",
        "BM25STD",
        "LIMIT",
        0,
        100,
        "DIALECT",
        2,
    )
    client.close()
    ranked = sorted((-float(score), doc.decode()) for doc, score in zip(reply[1::2], reply[2::2]))
    return [(s, doc.rsplit(":", 1)[1]) for s, doc in ranked]


def _floor(ranked: list[tuple[float, str]]) -> list[tuple[str, float]]:
    """``(key, score)`` of a ranking of ``(-score, key)`` scoring at least ``HybridSpec().floor``
    of the best."""
    return [(k, -s) for s, k in ranked if s <= HybridSpec().floor * ranked[0][0]]


@pytest.mark.parametrize("backend", MODES)
def test_fused_order_is_fuse_of_both_sides(backend: str, make_store: StoreFactory) -> None:
    texts = _corpus()
    # every word counts as rare (a test of the fusion, not of the rule)
    hybrid = make_store(index=_index(rare_share=1.0, fusion="relative"))
    vector_only = make_store(index={**_index(), "hybrid": None})
    for store in (hybrid, vector_only):
        for key, text in texts.items():
            store.put(("c",), key, {"text": text})
    query = "alpha beta"
    spec = HybridSpec(rare_share=1.0, fusion="relative")
    for offset, limit in ((0, 10), (3, 5), (0, 40)):
        n = spec.candidates(offset, limit)
        # prefix (): the server's lexical query is the text clause alone, as computed here;
        # the vector side ranks the page's nearest, as a vector-only search
        found = vector_only.search((), query=query, limit=offset + limit)
        vector = [(r.key, float(r.score or 0.0)) for r in found]
        lexical = _lexical_ranking(backend, hybrid, query, texts)[:n]
        # the sides rank differently
        assert lexical and [k for k, _ in lexical] != _keys(found)[: len(lexical)]
        expected = fuse(vector, lexical, spec)[offset : offset + limit]
        got = hybrid.search((), query=query, offset=offset, limit=limit)
        assert _keys(got) == [k for k, _ in expected]
        assert [r.score for r in got] == pytest.approx([s for _, s in expected])


@pytest.mark.parametrize("backend", MODES)
@pytest.mark.parametrize("offset", [0, 4])
def test_lexical_ties_across_the_page_end(
    backend: str, offset: int, make_store: StoreFactory
) -> None:
    """Every item scores the same for the query's word: which of them reach the page is decided by
    (namespace, key), not by the server's order (written in reverse key order here), so a lexical
    side that reads only the items up to the page's end (Query Engine) must read all those tied
    with the last of them, under a namespace prefix and globally. (18 items: the server's window,
    ``candidates``, holds them all, whichever of the tied items it would cut.)"""
    texts = {f"k{i:02d}": f"zeta f{i:02d}" for i in range(18)}
    store = make_store(index=_index(vector_weight=0, rare_share=1.0))
    for key in sorted(texts, reverse=True):
        store.put(("c",), key, {"text": texts[key]})
    lexical = _lexical_ranking(backend, store, "zeta", texts)
    assert len(lexical) == 18 and len({s for _, s in lexical}) == 1  # all tied
    store.put(("d",), "other", {"text": "eta f99"})  # ("c",) is not the whole index
    for prefix in ((), ("c",)):
        got = store.search(prefix, query="zeta", offset=offset, limit=3)
        assert _keys(got) == sorted(texts)[offset : offset + 3]


@pytest.mark.parametrize("backend", MODES)
@pytest.mark.parametrize("kw", [{}, {"filter": {"kind": "fact"}}])
def test_a_clause_every_item_matches_keeps_the_lexical_side(
    backend: str, kw: dict[str, Any], make_store: StoreFactory
) -> None:
    """A prefix holding the whole index, or a filter every item passes, selects them all: the
    lexical side still finds every item holding the word (the Query Engine returned one of 18 when
    the doubly negated clause led the word's branch)."""
    texts = {f"k{i:02d}": f"zeta f{i:02d}" for i in range(18)}
    store = make_store(index=_index(vector_weight=0, rare_share=1.0))
    for key in sorted(texts):
        store.put(("c",), key, {"text": texts[key], "kind": "fact"})
    got = store.search(("c",), query="zeta", limit=18, **kw)
    assert sorted(_keys(got)) == sorted(texts)
    assert all(r.score for r in got)  # each found by its word, not added unscored


@pytest.mark.parametrize("backend", ["redis-qe"])
def test_namespace_clause_does_not_reorder_the_lexical_ranking(make_store: StoreFactory) -> None:
    """Query Engine: the lexical ranking within a namespace is the text's own BM25STD order of the
    namespace's items (the namespace and filter clauses select, they do not score: BM25STD scores a
    whole query, and a tag clause, weighted by each item's length, reordered the hits)."""
    texts = _corpus()
    store = make_store(index=_index(vector_weight=0, rare_share=1.0, fusion="relative"))
    for key, text in texts.items():
        store.put(("c", "a" if int(key[1:]) % 2 else "b"), key, {"text": text})
    ranked = _server_ranking(store, ["alpha", "beta"])
    expected = [k for k, _ in _floor([(s, k) for s, k in ranked if int(k[1:]) % 2])]
    got = _keys(store.search(("c", "a"), query="alpha beta", limit=40))
    assert len(got) > 3 and got == expected


@pytest.mark.parametrize("backend", ["redis-qe"])
def test_every_query_word_scores_under_a_prefix(make_store: StoreFactory) -> None:
    """Query Engine: an item holding several of the query's words scores by all of them under a
    namespace prefix too (#26: a union of words inside the clause's intersection scored only the
    first word each item held, and the ranking under the prefix differed from the words' own)."""
    rnd = random.Random(26)
    query = ["alpha", "beta", "gamma", "delta", "omega"]
    filler = [f"f{i}" for i in range(60)]
    texts = {
        f"k{i:03d}": " ".join(rnd.sample(query, 1 + i % 4) + rnd.sample(filler, 4 + i % 9))
        for i in range(120)
    }
    store = make_store(index=_index(vector_weight=0, rare_share=1.0, fusion="relative"))
    for key, text in texts.items():
        store.put(("c", "a" if int(key[1:]) % 3 else "b"), key, {"text": text})
    ranked = _server_ranking(store, query)
    for prefix, kept in ((("c",), lambda k: True), (("c", "a"), lambda k: int(k[1:]) % 3 > 0)):
        expected = [k for k, _ in _floor([(s, k) for s, k in ranked if kept(k)])][:20]
        got = _keys(store.search(prefix, query=" ".join(query), limit=20))
        assert got == expected, prefix


@pytest.mark.parametrize("backend", MODES)
def test_lexical_side_alone_keeps_stop_words_and_does_not_stem(make_store: StoreFactory) -> None:
    store = make_store(index=_index(vector_weight=0))  # the page is the lexical ranking alone
    store.put(("s",), "the", {"text": "the a of"})
    store.put(("s",), "running", {"text": "running fast"})
    store.put(("s",), "run", {"text": "run slow"})
    assert _keys(store.search(("s",), query="THE")) == ["the"]
    assert _keys(store.search(("s",), query="running")) == ["running"]
    assert _keys(store.search(("s",), query="w9 zzz")) == []


@pytest.mark.parametrize("backend", MODES)
@pytest.mark.parametrize("recount", [True, False])
def test_a_query_word_selects_whole_words_only(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, recount: bool
) -> None:
    """A query word selects the items holding it as a word wherever it stands, never one holding
    it inside another word. Plain mode looks for it in the items' words on the server, or reads
    every word when it counts the collection's again (``recount``: every search; else only the
    first of the minute)."""
    if recount:
        monkeypatch.setattr(refresh, "REFRESH_S", -1.0)
    store = make_store(index=_index(vector_weight=0))  # the page is the lexical ranking alone
    texts = {
        "first": "art of war",
        "last": "modern art",
        "middle": "the art gallery",
        "alone": "art",
        "inside": "start smart artist arts",
        "accent": "un café",
        "accents": "cafés crème",
        "other": "painting",
    }
    store.batch([PutOp(("s",), key, {"text": text}) for key, text in texts.items()])
    for _ in range(2):
        assert sorted(_keys(store.search(("s",), query="art"))) == [
            "alone",
            "first",
            "last",
            "middle",
        ]
        assert _keys(store.search(("s",), query="café")) == ["accent"]
        assert sorted(_keys(store.search(("s",), query="war crème"))) == ["accents", "first"]


@pytest.mark.parametrize("backend", MODES)
def test_prefix_filters_and_paging(make_store: StoreFactory) -> None:
    store = make_store(index=_index())
    for i in range(30):
        ns = ("u", "a") if i % 3 else ("u", "b") if i % 2 else ("other",)
        text = f"invoice {40000 + i} " + ("paid" if i % 2 else "open")
        store.put(ns, f"i{i}", {"text": text, "kind": "paid" if i % 2 else "open", "n": i})
    query = "invoice 40007 paid"
    everything = store.search(("u",), query=query, limit=100)
    assert {r.namespace[:1] for r in everything} == {("u",)}
    assert len(everything) == sum(1 for i in range(30) if i % 3 or i % 2)
    assert everything[0].key == "i7"  # the identifier, on both sides
    # a page is cut from the ranking of as many results as it ends at (relative-score fusion
    # scales each side over its candidates, which a page's end sets)
    for o in range(0, 24, 4):
        page = store.search(("u",), query=query, offset=o, limit=4)
        assert _keys(page) == _keys(store.search(("u",), query=query, limit=o + 4))[o:]
    paid = store.search(("u",), query=query, filter={"kind": "paid"}, limit=100)
    assert paid and all(r.value["kind"] == "paid" for r in paid)
    ranged = store.search(("u",), query=query, filter={"n": {"$gte": 20}}, limit=100)
    assert ranged and all(r.value["n"] >= 20 for r in ranged)
    assert {r.key for r in ranged} == {r.key for r in everything if r.value["n"] >= 20}


@pytest.mark.parametrize("backend", MODES)
def test_expired_items_are_on_neither_side(make_store: StoreFactory) -> None:
    store = make_store(index=_index(), ttl={"refresh_on_read": False})
    store.put(("t",), "gone", {"text": "ticket 99120 expired"}, ttl=0.002)
    store.put(("t",), "kept", {"text": "ticket 10001 kept"})
    time.sleep(0.4)
    assert _keys(store.search(("t",), query="ticket 99120")) == ["kept"]


HOSTILE = [
    "@p:{x} | -foo ~bar",
    "*",
    "%%fuzzy%%",
    '"unterminated',
    "a|b|c",
    "-(x) @w:(y)",
    "{}[]()",
    "\x00 NUL \x00",
    "$t0 $B",
    "'; DROP TABLE x; --",
    "",
    "   ",
    "ünïcödé 数据 ERR_TLS",
    "word " * 5000,
    "x" * 20000,
]


@pytest.mark.parametrize("backend", MODES)
def test_hostile_query_text(make_store: StoreFactory) -> None:
    store = make_store(index=_index())
    store.put(("mine",), "a", {"text": "foo bar x y ERR_TLS word"})
    store.put(("theirs",), "b", {"text": "foo bar x y ERR_TLS word"})
    for query in HOSTILE:
        found = store.search(("mine",), query=query, limit=10)
        assert [r.namespace for r in found] == [("mine",)], query


@pytest.mark.parametrize("backend", MODES)
def test_stored_words(backend: str, make_store: StoreFactory) -> None:
    store = make_store(index={**_index(), "fields": ["title", "body"]})
    other = make_store(index={**_index(), "hybrid": None})
    assert isinstance(store, RedisStore) and isinstance(other, RedisStore)
    store.put(("w",), "all", {"title": "Order 48213", "body": "Shipped-late!"})
    store.put(("w",), "title", {"title": "Order 48213", "body": "hidden"}, index=["title"])
    store.put(("w",), "none", {"title": "Order", "body": "x"}, index=False)
    other.put(("w",), "all", {"title": "Order 48213", "body": "Shipped"})
    client = _client(backend)

    def stored(s: RedisStore, key: str) -> Any:
        return client.hget(s.keys.item("w", key), "w")

    assert stored(store, "all") == b"order 48213 shipped late"
    assert stored(store, "title") == b"order 48213"
    assert stored(store, "none") is None
    store.put(("w",), "all", {"title": "Order 48213"}, index=False)  # the words go with the vectors
    assert stored(store, "all") is None
    assert stored(other, "all") is None  # a store without hybrid search keeps no words
    # nor leaves a hybrid store's words behind when it rewrites an item on the same prefix
    same = RedisStore(client, prefix=store.keys.prefix, index={**_index(), "hybrid": None})  # type: ignore[arg-type]
    assert stored(store, "title") == b"order 48213"
    same.put(("w",), "title", {"title": "Order 77777", "body": "new"})
    assert stored(store, "title") is None
    client.close()


def test_index_made_before_hybrid_gets_the_field(qe_client: redis.Redis) -> None:
    """An items index created without the text field (and with the default stop words) gains it on
    ``setup()`` of a hybrid store; items written before have no words until ``reindex()``."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    old = ["p", "TAG", "SEPARATOR", ",", "t", "TAG", "SEPARATOR", ",", "u", "NUMERIC", "SORTABLE"]
    qe_client.execute_command(
        "FT.CREATE", f"{prefix}:items", "ON", "HASH", "PREFIX", 1, f"{prefix}:i:", "SCHEMA", *old
    )
    before = RedisStore(qe_client, prefix=prefix, index={**_index(), "hybrid": None})  # type: ignore[arg-type]
    for key, text in _notes().items():
        before.put(("notes",), key, {"text": text})
    store = RedisStore(qe_client, prefix=prefix, index=_index())  # type: ignore[arg-type]
    store.setup()
    # the lexical query names the field: without it the server would refuse the search
    assert "target" not in _keys(store.search(("notes",), query=IDENTIFIER, limit=5))
    assert store.reindex() == len(_notes())
    assert "target" in _keys(store.search(("notes",), query=IDENTIFIER, limit=5))


def _scored(store: BaseStore, namespace: tuple[str, ...], query: str) -> list[tuple[str, float]]:
    return [
        (r.key, round(r.score or 0.0, 9)) for r in store.search(namespace, query=query, limit=10)
    ]


def test_hybrid_on_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a Redis Cluster (plain mode) every namespace's items and words share a slot: the hybrid
    search reads them per namespace and finds the identifier across namespaces on several nodes;
    within one namespace the words of the others are counted per namespace, on their nodes, so it
    ranks exactly as one server holding the same items does (same collection statistics)."""
    procs = servers.start_redis_cluster(3, timeout=30)
    single = redis.Redis.from_url(servers.redis_url(modules=False))
    try:
        client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p.port) for p in procs])
        store = RedisStore(client, index=_index())  # type: ignore[arg-type]
        store.setup()
        alone = RedisStore(single, prefix=f"t{uuid.uuid4().hex[:12]}", mode="plain", index=_index())  # type: ignore[arg-type]
        assert store.mode == "plain"
        for s in (store, alone):
            for i, (key, text) in enumerate(_notes().items()):
                s.put(("notes", f"u{i % 6}"), key, {"text": text})
        found = store.search(("notes",), query=IDENTIFIER, limit=5)
        assert "target" in _keys(found) and all(r.namespace[0] == "notes" for r in found)
        monkeypatch.setattr(refresh, "REFRESH_S", -1.0)  # every search counts the collection again
        home = found[_keys(found).index("target")].namespace
        assert "target" in _keys(store.search(home, query=IDENTIFIER, limit=5))
        for query in (f"w1 w2 w3 w4 w5 {IDENTIFIER}", "w7 w8 w9 w10 w11 w12"):
            assert _scored(store, home, query) == _scored(alone, home, query)
        client.close()
    finally:
        single.close()
        for p in procs:
            p.close()


@pytest.mark.parametrize("backend", MODES)
def test_common_words_are_left_out(make_store: StoreFactory) -> None:
    """A query word held by more than ``max(page, rare_share x N)`` of the N items ranks nothing
    lexically (alone, the lexical side is empty); a word at the bound, and the rare words of the
    same query, still do."""
    store = make_store(index=_index(vector_weight=0, rare_share=0.25))  # lexical ranking alone
    ops = [
        PutOp(("c",), f"k{i}", {"text": f"shared {'note' if i < 150 else 'memo'} {i}"})
        for i in range(200)
    ]
    store.batch([*ops, PutOp(("c",), "rare", {"text": "shared 48213"})])  # 201 items: bound 50
    assert _keys(store.search(("c",), query="shared", limit=50)) == []
    assert _keys(store.search(("c",), query="note", limit=50)) == []  # 150 > 50
    assert _keys(store.search(("c",), query="shared 48213", limit=50)) == ["rare"]
    assert len(store.search(("c",), query="memo", limit=50)) == 50  # at the bound: rare
    # a page of 150 asks for as many texts as hold "note": alone, it cannot flood the page
    assert len(store.search(("c",), query="note", limit=150)) == 150


def _namespaced() -> list[PutOp]:
    """20 namespaces of 10 notes; "common" in half of every namespace's notes (100 of 200), one
    identifier in namespace u0."""
    ops = [
        PutOp((f"u{u}",), f"k{i}", {"text": f"{'common' if i % 2 else 'plain'} note {u} {i}"})
        for u in range(20)
        for i in range(10)
    ]
    return [*ops, PutOp(("u0",), "id", {"text": "common zq48213"})]


@pytest.mark.parametrize("backend", MODES)
def test_a_common_word_selects_within_the_namespace_only(make_store: StoreFactory) -> None:
    """A common word adds to the score of items holding a rare word of the query, within the
    searched namespace only: an item of another namespace holding both words stays out (the Query
    Engine's common-word branch requires the rare words and the clauses together)."""
    store = make_store(index=_index(vector_weight=0))  # the page is the lexical ranking alone
    store.batch([*_namespaced(), PutOp(("u1",), "other", {"text": "common common zq48213"})])
    got = store.search(("u0",), query="common zq48213", limit=10)
    assert [(r.namespace, r.key) for r in got] == [(("u0",), "id")]


@pytest.mark.parametrize("backend", MODES)
def test_rare_is_judged_by_the_collection(make_store: StoreFactory) -> None:
    """Whether a word is rare is judged by the whole collection, not the searched namespace: on
    both modes (plain mode counts the other namespaces' words itself), "common" is held by 101
    of 201 items, above the bound of 10, though by only 6 of the 11 items of ``u0`` (at most the
    page there); the namespace's identifier still counts."""
    store = make_store(index=_index(vector_weight=0))  # the lexical ranking alone
    store.batch(_namespaced())
    assert _keys(store.search(("u0",), query="common", limit=10)) == []
    assert _keys(store.search(("u0",), query="common zq48213", limit=10)) == ["id"]
    assert _keys(store.search((), query="common", limit=10)) == []


@pytest.mark.parametrize("backend", ["redis-plain"])
async def test_rare_is_judged_by_the_collection_async(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=_index(vector_weight=0))
    await store.abatch(_namespaced())
    assert _keys(await store.asearch(("u0",), query="common", limit=10)) == []
    assert _keys(await store.asearch(("u0",), query="common zq48213", limit=10)) == ["id"]
    assert _keys(await store.asearch((), query="common", limit=10)) == []


@pytest.mark.parametrize("backend", ["redis-plain"])
def test_plain_recounts_the_collection_once_a_minute(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain mode keeps the collection's word counts for a minute (what a namespace search sees
    of a word meanwhile is a lower bound), then counts again: an identifier that 20 new items of
    another namespace now hold becomes a common word for ``u0`` too. The minute is made to pass
    by shortening it (``core.refresh.REFRESH_S``)."""
    store = make_store(index=_index(vector_weight=0))
    store.batch(_namespaced())
    assert _keys(store.search(("u0",), query="zq48213", limit=10)) == ["id"]
    store.batch([PutOp(("u1",), f"z{i}", {"text": f"zq48213 again {i}"}) for i in range(20)])
    assert _keys(store.search(("u0",), query="zq48213", limit=10)) == ["id"]  # counted lately
    monkeypatch.setattr(refresh, "REFRESH_S", -1.0)  # the minute has passed
    assert _keys(store.search(("u0",), query="zq48213", limit=10)) == []  # 21 hold it: common


def test_one_round_with_words_not_counted_yet(
    qe_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Query Engine's lexical side counts new query words in its own script call: a hybrid
    search with words the store has not counted takes the one round of a vector search (under
    the relative fusion; the information fusion reads the page's lexical items in a second)."""
    store = RedisStore(
        qe_client, prefix=f"t{uuid.uuid4().hex[:12]}", index=_index(fusion="relative")
    )  # type: ignore[arg-type]
    for key, text in _notes().items():
        store.put(("notes",), key, {"text": text})
    store.search(("notes",), query="w1 w2", limit=5)  # the index's sizes are read once
    query = f"{IDENTIFIER} w3"
    with server_calls(qe_client) as calls, round_trips(monkeypatch) as writes:
        found = store.search(("notes",), query=query, limit=5)
    assert "target" in _keys(found)
    assert len(writes) == 1  # one round trip, as a vector search
    assert calls["evalsha"] == 2  # the vector side's script and the lexical side's
    with server_calls(qe_client) as again:
        assert store.search(("notes",), query=query, limit=5) == found
    # the two words were counted (FT.SEARCH ... LIMIT 0 0 each) and are remembered for a minute
    assert calls["FT.SEARCH"] - again["FT.SEARCH"] == 2


def _batch_data() -> tuple[list[PutOp], list[SearchOp]]:
    """Three namespaces of 30 notes sharing common words, each with one rare identifier; searches
    of a common word and of an identifier (uncounted words) to run in one batch."""
    puts = [
        PutOp((u,), f"k{i}", {"text": f"alpha common note {u} {i}"})
        for u in "abc"
        for i in range(30)
    ]
    puts += [PutOp((u,), "rare", {"text": f"only {u} zzqq{u}"}) for u in "abc"]
    searches = [
        SearchOp(("a",), None, 5, 0, "alpha"),
        SearchOp(("b",), None, 5, 0, "alpha zzqqb"),
        SearchOp(("c",), None, 5, 0, "zzqqc"),
    ]
    return puts, searches


def _pages(results: list[Any]) -> list[list[tuple[str, float | None]]]:
    return [[(r.key, r.score) for r in page] for page in results]


@pytest.mark.parametrize("backend", MODES)
def test_several_hybrid_searches_in_one_batch(backend: str, make_store: StoreFactory) -> None:
    """Searches of one batch each read their own replies, and the word counts cached are those
    of the words each sent: the batch equals the same searches one by one, and so does the batch
    again (plain mode: once counted, the items' words are read as the batch's query words each
    holds)."""
    store = make_store(index=_index())
    puts, searches = _batch_data()
    store.batch(puts)
    batched = _pages(store.batch(searches))  # the first: sizes and words not counted yet
    assert _pages([store.batch([op])[0] for op in searches]) == batched
    assert _pages(store.batch(searches)) == batched
    assert batched[1][0][0] == "rare" and batched[2][0][0] == "rare"


@pytest.mark.parametrize("backend", MODES)
def test_a_batch_of_many_query_words(make_store: StoreFactory) -> None:
    """A batch whose searches hold more distinct words than one search may send (``MAX_TERMS``)
    ranks as its searches one by one (plain mode reads every word of the items for it)."""
    store = make_store(index=_index())
    puts, _ = _batch_data()
    store.batch(puts)
    searches = [
        SearchOp((u,), None, 5, 0, " ".join(f"v{u}{i}x{j}" for j in range(12)) + f" zzqq{u} alpha")
        for i in range(3)
        for u in "abc"
    ]
    assert len({w for op in searches for w in (op.query or "").split()}) > MAX_TERMS
    store.batch(searches[:1])  # the collection's words counted: the batch is not a recount
    batched = _pages(store.batch(searches))
    assert _pages([store.batch([op])[0] for op in searches]) == batched
    assert all(page[0][0] == "rare" for page in batched)


@pytest.mark.parametrize("backend", MODES)
async def test_several_hybrid_searches_in_one_batch_async(
    backend: str, make_astore: AsyncStoreFactory
) -> None:
    store = await make_astore(index=_index())
    puts, searches = _batch_data()
    await store.abatch(puts)
    batched = _pages(await store.abatch(searches))
    assert _pages([(await store.abatch([op]))[0] for op in searches]) == batched
    assert _pages(await store.abatch(searches)) == batched
    assert batched[1][0][0] == "rare" and batched[2][0][0] == "rare"


@pytest.mark.parametrize(
    ("namespace", "key"),
    [(("c",), "k"), (("a:b}", "ü 数据"), "x}:y:1"), (("{", "}:"), ""), (("n",) * 5, ":")],
)
def test_an_unread_lexical_hit_is_known_by_its_hash_key(
    namespace: tuple[str, ...], key: str
) -> None:
    """A lexical hit past the page's end comes back as its hash key alone: the (namespace, key)
    read from it are those the key was made of, whatever the labels and key hold."""
    ns_text = nsp.join(namespace)
    keys = Keys("pre_fix-1")
    hash_key = keys.item(ns_text, key)
    assert _hit(keys, [hash_key, "2.5"]) == Hit((ns_text, key), 2.5, None)
