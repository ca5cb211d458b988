"""What the two stores' tests of the ``information`` fusion share (tests/postgres and tests/redis
``test_information_fusion.py``): the memories (each embedded at its own angle from the query), and
the reference page computed here from their texts and vectors."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import SearchItem

from langmem_adapters.core.hybrid import HybridSpec, query_words
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information

OPTIONS = {"fusion": "information", "rare_share": 0.2}
HYBRID = HybridSpec(fusion="information", rare_share=0.2)
DIMS = 8


class Memory(NamedTuple):
    namespace: tuple[str, ...]
    key: str
    text: str
    angle: float  # degrees from the query's vector
    kind: str = "a"


# One namespace: "v" nearest the query with none of its words; "b" near, holding "kiwi"; "a" far,
# holding "kiwi" and the common "apple" (the best lexical candidate); five "plum" and five "grape"
# items (each five tied) between them; fillers holding "apple", far.
MEMORIES = [
    Memory(("n", "u1"), "v", "nothing said here", 0),
    Memory(("n", "u1"), "b", "kiwi", 10),
    Memory(("n", "u1"), "a", "kiwi apple", 90),
    *[Memory(("n", "u1"), f"d{i}", f"plum {i}", 20 + 5 * i) for i in range(5)],
    *[Memory(("n", "u1"), f"g{i}", f"grape {i}", 45 + 5 * i) for i in range(5)],
    *[Memory(("n", "u1"), f"f{i}", f"apple filler {i}", 100 + 3 * i) for i in range(22)],
]
# A second user and filtered-out twins, for the prefix and filter checks.
OTHERS = [
    Memory(("n", "u2"), "b2", "kiwi too", 5),
    Memory(("n", "u2"), "p2", "plum kiwi", 15),
    Memory(("n", "u1"), "bx", "kiwi plum", 12, kind="x"),
    Memory(("n", "u1"), "ax", "kiwi apple plum grape", 3, kind="x"),
]


class FilterCase(NamedTuple):
    """One search of the prefix and filter checks: its prefix, its other arguments
    (``store.search(prefix, **kwargs)``) and the reference page."""

    prefix: tuple[str, ...]
    kwargs: dict[str, Any]
    want: list[tuple[str, float]]


def filter_cases(memories: Sequence[Memory], *, capped: bool = False) -> Iterator[FilterCase]:
    """The prefix and filter checks both stores' tests run over ``memories`` (``MEMORIES +
    OTHERS``), each with its reference page (``capped``: see :func:`reference`)."""
    prefixes = ((("n", "u1"), "a"), (("n",), "x"), (("n", "u2"), None), (("n", "u1"), None))
    for prefix, kind in prefixes:
        for query in ("kiwi apple plum grape", "plum kiwi"):
            for offset, limit in ((0, 1), (0, 4), (2, 3)):
                want = reference(memories, prefix, query, kind, offset, limit, capped=capped)
                where = None if kind is None else {"kind": kind}
                kwargs = {"query": query, "filter": where, "offset": offset, "limit": limit}
                yield FilterCase(prefix, kwargs, want)


def vector(angle: float) -> list[float]:
    return [math.cos(math.radians(angle)), math.sin(math.radians(angle))] + [0.0] * (DIMS - 2)


class Angles(Embeddings):
    """A memory's text (each its own) embeds at its angle; a query at angle 0; any other text at 90
    degrees."""

    def __init__(self, memories: Sequence[Memory]) -> None:
        self.angles = {m.text: m.angle for m in memories}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector(self.angles.get(t, 90.0)) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return vector(0.0)


def distance(m: Memory) -> float:
    """The memory's cosine distance to the query (the query's vector is at angle 0)."""
    v = np.array(vector(m.angle), dtype=np.float32)
    q = np.array(vector(0.0), dtype=np.float32)
    return float(1 - v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))


def reference(
    memories: Sequence[Memory],
    prefix: tuple[str, ...],
    query: str,
    kind: str | None,
    offset: int,
    limit: int,
    *,
    least: int = 0,
    capped: bool = False,
) -> list[tuple[str, float]]:
    """The page (keys, fused scores) computed here: the vector side's nearest ``page`` items in
    scope, the lexical candidates (in scope, holding a query word held by at most the bound's
    items of the whole collection) by IDF sum, then ``fuse_information``. Each word's df is
    counted over the collection, exactly (Redis) or, ``capped``, to one past the bound (Postgres,
    which counts a word it has no statistics for no further); ``least``: the least ``n`` (a
    memory's place) in scope."""
    page, n = offset + limit, len(memories)
    bound = max(1, page, math.floor(HYBRID.rare_share * n))
    words = query_words(query)
    df = {w: sum(w in m.text.split() for m in memories) for w in words}
    if capped:
        df = {w: min(d, bound + 1) for w, d in df.items()}
    idf = {w: math.log(n / d) for w, d in df.items() if d}
    inside = [
        m
        for i, m in enumerate(memories)
        if m.namespace[: len(prefix)] == prefix and kind in (None, m.kind) and i >= least
    ]
    near = sorted(inside, key=distance)[:page]
    held = [m for m in inside if any(0 < df[w] <= bound and w in m.text.split() for w in words)]
    score = {m.key: sum(idf[w] for w in words if w in m.text.split()) for m in held}
    held.sort(key=lambda m: (-score[m.key], ".".join(m.namespace), m.key))
    depth = HYBRID.candidates(offset, limit)
    fused = fuse_information(
        [VectorCandidate(m.key, distance(m)) for m in near],
        [LexicalCandidate(m.key, score[m.key], distance(m)) for m in held[:depth]],
        HYBRID,
        page,
        depth,
        mass=sum(idf.values()),  # every query word some memory holds
    )
    return fused[offset:page]


def check(got: list[SearchItem], want: list[tuple[str, float]], memories: Sequence[Memory]) -> None:
    """The page is the reference's, each item with its own value and the reference's score."""
    assert [r.key for r in got] == [k for k, _ in want]
    assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
    texts = {m.key: m.text for m in memories}
    assert [r.value["text"] for r in got] == [texts[r.key] for r in got]
