"""The memory tiers and tools on hybrid stores (``index={..., "hybrid": True}``, #18): they rank by
the store's fused score, an identifier finds its memory among near-miss ones, the episodic recency
blend keeps the fused score on a 0..1 scale, and ``recall``'s ``min_score`` and ``diversity``. The
tests of the score's scale run under the default fusion and the ``information`` one too."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from benchmarks.wordllama_embeddings import WordLlamaEmbeddings
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.demo import ScriptedMemoryModel
from langmem_adapters.errors import InvalidMemoryQueryError, MemoryTypeError
from langmem_adapters.manager import MemoryManager
from langmem_adapters.memory import EpisodicMemory, SemanticMemory
from langmem_adapters.tools import create_memory_tools
from tests.manager.helpers import process
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index

ROOT = ("acme", "u1")
HYBRID_BACKENDS = ["postgres", "redis-qe", "redis-plain"]
NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
PRODUCTS = ["standing desk", "office chair", "desk lamp", "blender", "yoga mat", "backpack"]
#: Near-miss order numbers around 48213 (digit swaps, +-1, one digit changed), as in the benchmark.
NUMBERS = [48213, 48231, 48214, 48212, 48223, 42813, 48113, 48203, 84213, 48219, 48210, 48313]
#: The fusions whose scores the tiers read on a 0..1 scale as they are (``best_score()`` 1.0).
SHARE_FUSIONS = ["relative", "information"]
#: A question the first order's memory answers best on both sides: nearest, holding every word
#: some memory holds ("happened" none), so 1.0 under both fusions.
ORDER_QUESTION = "what happened with order 48213, the standing desk?"


def hybrid_index(**options: Any) -> dict[str, Any]:
    """WordLlama (real text, 256-d) on ``text``, hybrid with the given options (default ``True``)."""
    return {
        "dims": WordLlamaEmbeddings.dims,
        "embed": WordLlamaEmbeddings(),
        "fields": ["text"],
        "hybrid": options or True,
    }


def order_text(i: int, n: int) -> str:
    return (
        f"Order {n} ({PRODUCTS[i % len(PRODUCTS)]}) arrived damaged; a replacement is on its way."
    )


def clock() -> datetime:
    return NOW


def best_fused(options: dict[str, Any] | None = None) -> float:
    """The fused score of an item ranked first on both sides (1.0 for relative-score fusion,
    ``(vector_weight + lexical_weight) / (k + 1)`` for rank fusion)."""
    spec = HybridSpec.from_option(options or True)
    assert spec is not None
    return spec.best_score()


def store_ranking(
    store: BaseStore, ns: tuple[str, ...], query: str, limit: int = 10, **kw: Any
) -> list[Any]:
    return [(h.key, h.score) for h in store.search(ns, query=query, limit=limit, **kw)]


# ----------------------------------------------------------------------------- semantic


@pytest.mark.parametrize("fusion", SHARE_FUSIONS)
@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
def test_semantic_recall_finds_the_identifier_among_near_misses(
    make_store: StoreFactory, fusion: str
) -> None:
    """Among 12 near-miss memories the one holding the identifier is first (under the information
    fusion too: a word one memory holds carries ln 12, as much as the nearest vector rank; with
    BM25's IDF, 2.16 nats, it came second: its vector rank is 9)."""
    store = make_store(index=hybrid_index(fusion=fusion))
    facts = SemanticMemory(store, namespace=ROOT)
    written = [facts.remember(order_text(i, n)) for i, n in enumerate(NUMBERS)]
    [top] = facts.recall("48213", k=1)
    assert top.id == written[0].id
    # The store's fused score over the best one possible: first on the lexical side at least.
    assert top.score is not None and 0.5 <= top.score <= 1.0


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
@pytest.mark.parametrize("fusion", SHARE_FUSIONS)
def test_semantic_recall_keeps_the_stores_fused_order(
    make_store: StoreFactory, fusion: str
) -> None:
    store = make_store(index=hybrid_index(fusion=fusion))
    facts = SemanticMemory(store, namespace=ROOT)
    by_key = {facts.remember(order_text(i, n)).id: n for i, n in enumerate(NUMBERS)}
    query = ORDER_QUESTION
    got = [(f.id, f.score) for f in facts.recall(query, k=6)]
    # the tier's own page (50: relative-score fusion scales each side over a page's candidates)
    ranking = store_ranking(store, (*ROOT, "semantic"), query, limit=50)
    expected = [(k, s) for k, s in ranking if k in by_key][:6]
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])  # best_score() 1.0
    assert got[0][1] == pytest.approx(1.0) and all(0.0 <= s <= 1.0 for _, s in got)


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
async def test_async_recalls_on_a_hybrid_store(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=hybrid_index())
    facts = SemanticMemory(store, namespace=ROOT)
    log = EpisodicMemory(store, namespace=ROOT, clock=clock)
    for i, n in enumerate(NUMBERS):
        await facts.aremember(order_text(i, n))
        await log.arecord(order_text(i, n))
    [fact] = await facts.arecall("48213", k=1)
    [episode] = await log.arecall("48213", k=1)
    assert fact.text == episode.text == order_text(0, NUMBERS[0])


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
def test_semantic_min_score_on_the_relevance_scale(make_store: StoreFactory) -> None:
    """On a hybrid store ``min_score`` compares the fused score over the best possible: only the
    fact holding the identifier (first on the lexical side) scores over 1/2, the near misses
    (on the vector side alone) at most 1/2. The raw fused score (< 0.033) would drop them all."""
    facts = SemanticMemory(make_store(index=hybrid_index()), namespace=ROOT)
    written = [facts.remember(order_text(i, n)) for i, n in enumerate(NUMBERS)]
    assert len(facts.recall("48213", k=len(NUMBERS))) == len(NUMBERS)
    kept = facts.recall("48213", k=len(NUMBERS), min_score=0.51)
    assert [f.id for f in kept] == [written[0].id]


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
@pytest.mark.parametrize("fusion", SHARE_FUSIONS)
def test_semantic_min_score_keeps_what_answers_best_on_both_sides(
    make_store: StoreFactory, fusion: str
) -> None:
    """1.0 is first on both sides (relative), or nearest of all candidates holding every weighed
    word (information): ``min_score=0.99`` keeps only the fact the question names, and every
    score is in [0, 1] under either fusion."""
    facts = SemanticMemory(make_store(index=hybrid_index(fusion=fusion)), namespace=ROOT)
    written = [facts.remember(order_text(i, n)) for i, n in enumerate(NUMBERS)]
    ranked = facts.recall(ORDER_QUESTION, k=len(NUMBERS))
    assert all(f.score is not None and 0.0 <= f.score <= 1.0 for f in ranked)
    assert len(ranked) == len(NUMBERS) and ranked[1].score is not None and ranked[1].score < 0.99
    kept = facts.recall(ORDER_QUESTION, k=len(NUMBERS), min_score=0.99)
    assert [f.id for f in kept] == [written[0].id]


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
@pytest.mark.parametrize("fusion", SHARE_FUSIONS)
async def test_manager_duplicate_score_on_a_hybrid_store(
    make_store: StoreFactory, fusion: str
) -> None:
    """The manager's ``duplicate_score`` (in [0, 1]) fires on a hybrid store: the one fact, first on
    both sides (under information: the only candidate, holding every word some memory holds),
    scores 1.0 and the message repeating it is skipped without a model call."""
    store = make_store(index=hybrid_index(fusion=fusion))
    SemanticMemory(store, namespace=("memories", "ada")).remember("Ada prefers green tea")
    message = [HumanMessage("Ada prefers green tea a lot")]  # Jaccard 4/6: not lexical
    model = ScriptedMemoryModel(script=lambda data: [])
    mm = MemoryManager(
        model,
        namespace=("memories", "{user_id}"),
        store=store,
        duplicate_threshold=1.0,
        duplicate_score=0.9,
    )
    result = await process(mm, message, {"configurable": {"user_id": "ada"}}, False)
    assert result.skipped == "duplicate" and model.calls == 0
    assert result.shown[0].score == pytest.approx(1.0)


# ----------------------------------------------------------------------------- episodic


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
@pytest.mark.parametrize(
    ("fusion", "query"),
    [("relative", "48213"), ("relative", ORDER_QUESTION), ("information", ORDER_QUESTION)],
)
def test_episodic_blend_puts_the_fused_score_on_a_0_to_1_scale(
    make_store: StoreFactory, fusion: str, query: str
) -> None:
    store = make_store(index=hybrid_index(fusion=fusion))
    # The exact episode is a day older than its near misses: a raw fused score (at most 2/61
    # under rank fusion; nats, unbounded, under information before its share) would leave the
    # ranking to recency alone, or to the fused score alone.
    old = EpisodicMemory(store, namespace=ROOT, clock=lambda: NOW - timedelta(days=1))
    target = old.record(order_text(0, NUMBERS[0]))
    log = EpisodicMemory(store, namespace=ROOT, clock=clock)
    for i, n in enumerate(NUMBERS[1:], 1):
        log.record(order_text(i, n))
    top = log.recall(query, k=3)
    assert top[0].id == target.id
    only_text = EpisodicMemory(store, namespace=ROOT, clock=clock, recency_weight=0.0)
    scores = [e.score for e in only_text.recall(query, k=len(NUMBERS))]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    # The first is ranked first on the lexical side at least: half the best fused score or more.
    assert scores[0] is not None and scores[0] >= 0.5
    # Only recency left: the target, a day older, is not first.
    only_time = EpisodicMemory(store, namespace=ROOT, clock=clock, recency_weight=1.0)
    assert only_time.recall(query, k=1)[0].id != target.id


# ----------------------------------------------------------------------------- tools


@pytest.mark.parametrize("backend", HYBRID_BACKENDS)
def test_search_tools_find_the_identifier_on_a_hybrid_store(make_store: StoreFactory) -> None:
    store = make_store(index=hybrid_index())
    tools = {t.name: t for t in create_memory_tools(("memories", "{user_id}"), store=store)}
    config: RunnableConfig = {"configurable": {"user_id": "u1"}}
    ids = []
    for i, n in enumerate(NUMBERS):
        msg = tools["manage_memory"].invoke({"content": order_text(i, n)}, config)
        ids.append(msg.split()[-1])
        tools["record_episode"].invoke({"text": order_text(i, n)}, config)

    def first(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        call = {"type": "tool_call", "id": "c1", "name": tool, "args": args}
        result = tools[tool].invoke(call, config)
        assert isinstance(result, ToolMessage)
        return json.loads(str(result.content))[0]

    hit = first("search_memory", {"query": "48213", "limit": 3})
    assert hit["id"] == ids[0] and 0.5 <= hit["score"] <= 1.0  # on recall's 0..1 scale
    episode = first("search_episodes", {"query": "48213", "limit": 3})
    assert str(NUMBERS[0]) in episode["text"]


# ----------------------------------------------------------------------------- min_score, diversity

PARIS = [
    "Lives in Paris near the river.",
    "The user lives in Paris near the river.",
    "Works in a bakery and starts at five.",
]


@pytest.mark.parametrize("backend", ["memory", "postgres"])
def test_min_score_drops_weak_facts(make_store: StoreFactory) -> None:
    facts = SemanticMemory(make_store(index=hash_index(fields=["text"])), namespace=ROOT)
    for text in PARIS:
        facts.remember(text)
    ranked = facts.recall("lives in Paris", k=3)
    scores = [f.score for f in ranked]
    assert len(ranked) == 3 and all(s is not None for s in scores)
    floor = (scores[0] + scores[2]) / 2  # type: ignore[operator]
    kept = facts.recall("lives in Paris", k=3, min_score=floor)
    assert [f.id for f in kept] == [f.id for f in ranked if f.score >= floor]  # type: ignore[operator]
    assert 0 < len(kept) < 3


@pytest.mark.parametrize("backend", ["memory", "redis-qe"])
async def test_diversity_skips_a_near_duplicate(make_astore: AsyncStoreFactory) -> None:
    facts = SemanticMemory(await make_astore(index=hash_index(fields=["text"])), namespace=ROOT)
    written = [await facts.aremember(text) for text in PARIS]
    plain = await facts.arecall("lives in Paris", k=2)
    assert {f.id for f in plain} == {written[0].id, written[1].id}
    diverse = await facts.arecall("lives in Paris", k=2, diversity=0.7)
    assert diverse[0].id == plain[0].id and diverse[1].id == written[2].id


@pytest.mark.parametrize("backend", ["memory"])
def test_episodic_min_score_and_diversity(make_store: StoreFactory) -> None:
    log = EpisodicMemory(make_store(index=hash_index(fields=["text"])), namespace=ROOT, clock=clock)
    written = [log.record(text) for text in PARIS]
    plain = log.recall("lives in Paris", k=2)
    assert {e.id for e in plain} == {written[0].id, written[1].id}
    diverse = log.recall("lives in Paris", k=2, diversity=0.7)
    assert diverse[1].id == written[2].id
    top = plain[0].score
    assert top is not None
    assert [e.id for e in log.recall("lives in Paris", k=3, min_score=top)] == [plain[0].id]


@pytest.mark.parametrize("backend", ["memory"])
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"min_score": "high"}, MemoryTypeError),
        ({"min_score": float("nan")}, InvalidMemoryQueryError),
        ({"diversity": 1.5}, InvalidMemoryQueryError),
        ({"diversity": True}, MemoryTypeError),
    ],
)
def test_bad_min_score_and_diversity_are_our_errors(
    make_store: StoreFactory, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    with pytest.raises(error):
        SemanticMemory(store, namespace=ROOT).recall("x", **kwargs)
    with pytest.raises(error):
        EpisodicMemory(store, namespace=ROOT).recall("x", **kwargs)
