"""Hybrid (lexical + vector) search, the same on every store that offers it: ``index={...,
"hybrid": True}`` ranks by the fusion of a lexical and the vector ranking (``core.information`` by
default, checked against a reference in each backend's ``test_information_fusion.py``; the
relative-score fusion of ``core.hybrid.fuse`` checked here); prefix, filters, TTL, paging and the
unscored-items rule stay as for vector search.

Parametrised over the hybrid-capable stores (``backend``), sync and async. The data is built so that
the identifier questions fail without the lexical side: the distractors share every other word of
the question, so the vector ranking puts the item holding the identifier low.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp

from langmem_adapters.core.hybrid import HybridSpec, fuse
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only

pytestmark = ours_only("InMemoryStore has no hybrid search")

NS = ("users", "ana")
QUESTION = "what is the status of order 48213"
# Distractors share the question's words but not its identifier; the target shares only it.
DISTRACTORS = [f"the status of order {n} is pending, what a wait" for n in range(50000, 50040)]
TARGET = ("target", "Shipment 48213 left the warehouse in Lyon on Monday")
OTHERS = [
    ("tls", "deploy failed with ERR_TLS_CERT_ALTNAME on the gateway"),
    ("path", "the config lives in /etc/billing/conf-7.yaml since March"),
    ("lunch", "Ana prefers ramen for lunch on Fridays"),
]


def fields_index(**hybrid: Any) -> dict[str, Any]:
    """A HashEmbeddings index over ``text``; hybrid with these options (``True`` when none)."""
    return hash_index(fields=["text"], hybrid=hybrid or True)


def memories() -> list[PutOp]:
    """The distractors, the target and a few other memories under ``NS``, plus one elsewhere."""
    ops = [
        PutOp(NS, f"d{i}", {"text": text, "kind": "order"}) for i, text in enumerate(DISTRACTORS)
    ]
    ops.append(PutOp(NS, TARGET[0], {"text": TARGET[1], "kind": "shipment"}))
    ops += [PutOp(NS, key, {"text": text, "kind": "note"}) for key, text in OTHERS]
    ops.append(PutOp(("users", "bo"), "elsewhere", {"text": TARGET[1], "kind": "shipment"}))
    return ops


def load(make_store: StoreFactory, **hybrid: Any) -> tuple[BaseStore, BaseStore]:
    """A vector-only store and a hybrid one holding the same memories."""
    vector = make_store(index=hash_index(fields=["text"]))
    vector.batch(memories())
    store = make_store(index=fields_index(**hybrid))
    store.batch(memories())
    return vector, store


def keys(results: list[Any]) -> list[str]:
    return [r.key for r in results]


def test_identifiers_found_by_hybrid_that_vector_search_ranks_low(
    make_store: StoreFactory,
) -> None:
    vector, store = load(make_store)
    # The data is hard for the vector side alone: the target is not in its first ten.
    assert TARGET[0] not in keys(vector.search(NS, query=QUESTION, limit=10))
    # Fusion: the distractors the vector side ranks first also hold the question's words, so the
    # target (first lexically) lands among the first few rather than first.
    assert TARGET[0] in keys(store.search(NS, query=QUESTION, limit=3))
    # A query whose only selecting word is an identifier one memory holds: that memory is the
    # lexical side's only match (scaled 1), level with the vector side's first (ties keep the
    # vector order), so it is first or second on a page of 3, first on a page of 10 (where the
    # vector side ranks it too).
    for key, ident in (("tls", "ERR_TLS_CERT_ALTNAME"), ("path", "/etc/billing/conf-7.yaml")):
        assert key in keys(store.search(NS, query=f"anything about {ident}?", limit=3))[:2]
        assert keys(store.search(NS, query=f"anything about {ident}?", limit=10))[0] == key


def scored(results: list[Any]) -> list[tuple[str, float]]:
    return [(r.key, r.score) for r in results]


def test_fused_ranking_is_the_fusion_of_the_two_sides(make_store: StoreFactory) -> None:
    # every word counts as rare, whatever the page: a test of the fusion, not of the rule
    vector, store = load(make_store, rare_share=1.0, fusion="relative")
    lexical_only = make_store(
        index=fields_index(vector_weight=0, rare_share=1.0, fusion="relative")
    )
    lexical_only.batch(memories())  # its own copy where stores do not share their data (Redis)
    spec = HybridSpec(rare_share=1.0, fusion="relative")
    for offset, limit in ((0, 10), (5, 5), (12, 4)):
        # the vector side ranks the page's nearest (as a vector search), the lexical side more
        depth = spec.candidates(offset, limit)
        vector_side = scored(vector.search(NS, query=QUESTION, limit=offset + limit))
        lexical_side = scored(lexical_only.search(NS, query=QUESTION, limit=depth))
        assert TARGET[0] == lexical_side[0][0]
        expected = fuse(vector_side, lexical_side, spec)[offset : offset + limit]
        got = store.search(NS, query=QUESTION, offset=offset, limit=limit)
        assert [(r.key, r.score) for r in got] == [(k, pytest.approx(s)) for k, s in expected]


@pytest.mark.parametrize("fusion", ["information", "relative"])
def test_a_query_without_words_ranks_by_the_vector_side(
    make_store: StoreFactory, fusion: str
) -> None:
    vector, store = load(make_store, fusion=fusion)
    query = "?? !! --"
    expected = keys(vector.search(NS, query=query, limit=8))
    got = store.search(NS, query=query, limit=8)
    assert keys(got) == expected
    sims = [r.score for r in vector.search(NS, query=query, limit=8)]
    if fusion == "relative":  # the similarities scaled 0..1 over the page, at half the weight
        low, high = min(sims), max(sims)
        want = [0.5 * (s - low) / (high - low) for s in sims]
    else:  # no lexical candidate: ln(M / rank) / ln M of the M = 8, tied distances one rank
        ranks = [1 + sum(t > s for t in sims) for s in sims]
        want = [math.log(8 / rank) / math.log(8) for rank in ranks]
    assert [r.score for r in got] == pytest.approx(want)


def test_the_lexical_side_leaves_stop_words_out_unless_the_query_has_no_other(
    make_store: StoreFactory,
) -> None:
    """Stop words (``core.hybrid.STOP_WORDS``) select no item when the query has other words; a
    query of stop words only keeps them. Every word selects (``rare_share`` 1) and the page is the
    lexical ranking alone (``vector_weight`` 0), so an item found by a stop word would show."""
    store = make_store(index=fields_index(vector_weight=0, rare_share=1.0, fusion="relative"))
    store.put(NS, "stops", {"text": "the a of"})
    store.put(NS, "kiwi", {"text": "kiwi fruit"})
    store.put(NS, "other", {"text": "banana bread"})
    assert keys(store.search(NS, query="the kiwi of")) == ["kiwi"]
    assert keys(store.search(NS, query="THE of")) == ["stops"]


def test_prefix_filter_and_paging(make_store: StoreFactory) -> None:
    _, store = load(make_store)
    found = store.search(("users",), query=QUESTION, limit=60)
    assert {"target", "elsewhere"} <= set(keys(found))
    assert "elsewhere" not in keys(store.search(NS, query=QUESTION, limit=60))
    only = store.search(NS, query=QUESTION, filter={"kind": "shipment"}, limit=10)
    assert keys(only) == ["target"]
    notes = store.search(NS, query=QUESTION, filter={"kind": {"$ne": "order"}}, limit=10)
    assert set(keys(notes)) == {"target", *(k for k, _ in OTHERS)}
    # Pages drawing on the same number of candidates (``HybridSpec.candidates``: 20 for any page
    # ending within the first 5) are cut from one fused ranking.
    whole = keys(store.search(("users",), query=QUESTION, limit=5))
    pages = [
        keys(store.search(("users",), query=QUESTION, offset=o, limit=n))
        for o, n in ((0, 2), (2, 2), (4, 1))
    ]
    assert [k for page in pages for k in page] == whole
    assert len(set(whole)) == 5
    # a deep page is the tail of the ranking of as many results (45 items in all)
    deep = store.search(("users",), query=QUESTION, offset=30, limit=20)
    assert len(deep) == 15
    assert keys(deep) == keys(store.search(("users",), query=QUESTION, limit=50))[30:]


def test_unscored_items_follow_the_fused_ones(make_store: StoreFactory) -> None:
    store = make_store(index=fields_index())
    store.put(NS, "scored", {"text": "order 48213 shipped"})
    store.put(NS, "off", {"text": "order 48213 shipped too"}, index=False)
    store.put(NS, "notext", {"other": "order 48213"})
    got = store.search(NS, query="order 48213", limit=10)
    assert keys(got) == ["scored", "notext", "off"]
    assert got[0].score is not None and got[1].score is None and got[2].score is None


def test_expired_items_are_not_found(make_store: StoreFactory) -> None:
    store = make_store(index=fields_index(), ttl={"default_ttl": 10})
    store.put(NS, "live", {"text": "order 48213 shipped"})
    store.put(NS, "gone", {"text": "order 48213 shipped on Monday"}, ttl=0.01)
    time.sleep(1.0)
    assert keys(store.search(NS, query="order 48213 Monday", limit=10)) == ["live"]


@pytest.mark.parametrize(
    "query",
    [
        "' OR 1=1; DROP TABLE x; --",
        'say "hi" | @text:{x} -not *wild* ~maybe (a|b) %fuzzy% \\',
        "order 48213\x00 and \ud800 too",
        "48213 " * 5000,
        "",
        "   ",
    ],
)
def test_hostile_query_text_gives_results_under_the_prefix(
    make_store: StoreFactory, query: str
) -> None:
    _, store = load(make_store)
    got = store.search(NS, query=query, limit=50)
    assert all(r.namespace == NS for r in got)
    if query.strip():
        assert got and all(r.score is not None for r in got)


async def test_async_hybrid_matches_fusion(make_astore: AsyncStoreFactory) -> None:
    vector = await make_astore(index=hash_index(fields=["text"]))
    await vector.abatch(memories())
    store = await make_astore(index=fields_index(rare_share=1.0, fusion="relative"))
    await store.abatch(memories())
    lexical_only = await make_astore(
        index=fields_index(vector_weight=0, rare_share=1.0, fusion="relative")
    )
    await lexical_only.abatch(memories())  # its own copy where stores do not share their data
    spec = HybridSpec(rare_share=1.0, fusion="relative")
    depth = spec.candidates(0, 5)
    vector_side = scored(await vector.asearch(NS, query=QUESTION, limit=5))
    lexical_side = scored(await lexical_only.asearch(NS, query=QUESTION, limit=depth))
    expected = fuse(vector_side, lexical_side, spec)[:5]
    got = await store.asearch(NS, query=QUESTION, limit=5)
    assert [(r.key, r.score) for r in got] == [(k, pytest.approx(s)) for k, s in expected]
    assert TARGET[0] in keys(got)
    assert TARGET[0] not in keys(await vector.asearch(NS, query=QUESTION, limit=10))
