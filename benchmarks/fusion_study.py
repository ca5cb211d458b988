"""Offline study of hybrid fusions (#26): every design ranked on the same two sides, the sides
built as the stores build them, on LongMemEval, LoCoMo and our identifier set.

No store runs here. For each question and scope (the whole collection, or the question's
namespace) the two sides are what a hybrid search of a ``limit=10`` page fuses:

- **vector**: the page's 10 nearest items by exact cosine (WordLlama's bundled 256-d model, or
  with ``--embedder glove`` GloVe 6B 50-d word means, ``benchmarks/glove_embeddings.py``, or with
  ``--embedder minilm`` all-MiniLM-L6-v2, ``benchmarks/minilm_embeddings.py``);
- **lexical**: the best 40 (``HybridSpec.candidates(0, 10)``) of the items holding a query word
  that *selects* (``core.hybrid.query_words``, stop words aside; a word selects when the whole
  collection has at most ``HybridSpec.rare_bound(N, 10)`` texts holding it, 2% by default), scored
  over every query word either by ``core.bm25`` with the collection's statistics (Redis plain mode;
  the Query Engine's ``BM25STD`` is the same formula) or, ``--lexical idf``, by the sum of the IDF
  of the query words an item holds (Postgres).

A design maps the two sides (and, for the designs that need it, each lexical candidate's share of
the query's IDF mass, or the cosine of any item) to a ranking; recall@5 of that ranking is
reported per data set and scope, with the sides alone and the exact/BM25 baselines beside them:

- LongMemEval (``benchmarks/longmemeval.py``): share of a question's answer sessions in the top 5;
- LoCoMo (``benchmarks/locomo.py``): share of a question's evidence turns in the top 5 (a turn's
  text as the store holds it, image caption included);
- memory_set (``benchmarks/memory_set.py``, the set of ``bench_retrieval.py``): share of the
  relevant memories in the top 5 out of ``min(5, relevant)``, identifier and paraphrase questions
  apart, scopes ``user`` and ``global``.

The numbers are the ones to compare designs by; ``bench_conversations.py`` and
``bench_retrieval.py`` measure the stores themselves. Each data set's sides, and MiniLM's vectors
(``bench_retrieval.embedded``), are cached under ``benchmarks/.cache/`` (never committed; the first
run of the conversation sets takes several minutes, later ones seconds). The designs and what each measured: docs/hybrid.md, "Fusion
study".

Examples::

    python benchmarks/fusion_study.py                    # every design, the three data sets
    python benchmarks/fusion_study.py --lexical idf      # the lexical side scored as on Postgres
    python benchmarks/fusion_study.py --designs kept,coverage --data lme
    python benchmarks/fusion_study.py --dims 128         # WordLlama's 128-d truncation
    python benchmarks/fusion_study.py --embedder glove   # the second, unrelated embedder
    python benchmarks/fusion_study.py --embedder minilm  # the third, contextual (~20 min once)
    python benchmarks/fusion_study.py --idf plain        # IDF sums of ln(N / df), not BM25's
    python benchmarks/fusion_study.py --rare-share 0.05  # more words select the candidates
    python benchmarks/fusion_study.py --scope-stats      # a namespace's own word counts
    python benchmarks/fusion_study.py --fill 40          # common words select while few do
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, field

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import locomo, longmemeval, memory_set
from benchmarks.bench_retrieval import embedded
from benchmarks.glove_embeddings import DIMS as GLOVE_DIMS
from benchmarks.longmemeval import CACHE_DIR
from benchmarks.minilm_embeddings import DIMS as MINILM_DIMS
from langmem_adapters.core.bm25 import Corpus, bm25
from langmem_adapters.core.hybrid import HybridSpec, query_words, words

PAGE = 10
SPEC = HybridSpec()
LEXICAL_DEPTH = SPEC.candidates(0, PAGE)
#: Whether a query word no text holds counts in the query's IDF mass (with the highest IDF): it
#: is information the query carries that no candidate matches.
UNSEEN = True
#: Dimensions of the WordLlama vectors used (its Matryoshka truncations: 64, 128 or 256), to see
#: how a design's unit moves with the spread of the cosines.
DIMS = 256
#: The embedder of the vector side: ``wordllama``, ``glove`` (GloVe 6B 50-d word means) or
#: ``minilm`` (all-MiniLM-L6-v2, a contextual sentence model).
EMBEDDER = "wordllama"
#: The IDF of a word held by ``df`` of ``N`` texts in the fusions' IDF sums (and the lexical side's
#: ranking under ``--lexical idf``): ``bm25``, Lucene's smoothed ``ln(1 + (N - df + 0.5) / (df +
#: 0.5))``, or ``plain``, the information ``ln(N / df)`` (the unit of the vector side's ``ln(M /
#: rank)``; a word no text holds counts as held by half a text, in the IDF mass only).
IDF = "bm25"
#: Whether a namespace search counts its words over the namespace's items (``N`` and every ``df``)
#: instead of the whole collection's (``--scope-stats``).
SCOPE_STATS = False
#: Under ``--fill K``: while the rare words select fewer than ``K`` candidates in the scope, the next
#: rarest query word selects too (0: the stores' rule, rare words only).
FILL = 0


# --------------------------------------------------------------------------- the data


@dataclass
class Case:
    """One question in one scope: its vector, the items searched (``None``: all), how a ranking of
    item indexes scores (recall@5), and its group (question kind, or ``all``)."""

    text: str
    vec: np.ndarray
    scope: str
    within: np.ndarray | None
    judge: Callable[[Sequence[int]], float]
    group: str = "all"


@dataclass
class Collection:
    """A data set prepared for the study: each item's words and unit vector, the collection's word
    statistics, and its cases."""

    name: str
    tokens: list[list[str]]
    vecs: np.ndarray
    cases: list[Case] = field(default_factory=list)
    postings: dict[str, np.ndarray] = field(default_factory=dict)
    corpus: Corpus = field(default_factory=Corpus)

    def __post_init__(self) -> None:
        held: dict[str, list[int]] = defaultdict(list)
        for i, toks in enumerate(self.tokens):
            for w in set(toks):
                held[w].append(i)
        self.postings = {w: np.array(ids) for w, ids in held.items()}
        self.corpus.update(
            len(self.tokens), sum(map(len, self.tokens)), ((w, len(p)) for w, p in held.items())
        )

    def idf(self, word: str, within: np.ndarray | None = None) -> float:
        """The IDF (:data:`IDF`'s form) of ``word`` over the whole collection, or over the items
        ``within`` under :data:`SCOPE_STATS`."""
        n, df = self.counts(word, within)
        if IDF == "plain":
            return math.log(n / max(df, 0.5))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def counts(self, word: str, within: np.ndarray | None = None) -> tuple[int, int]:
        """``(N, df)`` of ``word``: over the collection, or over ``within`` under
        :data:`SCOPE_STATS`."""
        held = self.postings.get(word, np.array([], dtype=int))
        if SCOPE_STATS and within is not None:
            return len(within), int(np.isin(held, within).sum())
        return self.corpus.size, len(held)

    def size(self, within: np.ndarray | None = None) -> int:
        """``N``: the collection's items, or under :data:`SCOPE_STATS` those ``within``."""
        return len(within) if SCOPE_STATS and within is not None else self.corpus.size


def cache_tag(name: str) -> str:
    """A data set's name in its cache files: with the embedder's name unless WordLlama's."""
    return name if EMBEDDER == "wordllama" else f"{EMBEDDER}-{name}"


def embed(texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` by :data:`EMBEDDER` (the first :data:`DIMS` dimensions), as the
    benchmarks embed them (``bench_retrieval.embedded``: a slow embedder's vectors kept on disk)."""
    vectors = embedded(EMBEDDER, texts).vectors
    vecs = np.array([vectors[t] for t in texts], dtype=np.float64)[:, :DIMS]
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)


def conversations(name: str) -> Collection:
    """LongMemEval (``lme``) or LoCoMo (``locomo``): both scopes of every question."""
    data = longmemeval.load() if name == "lme" else locomo.load()
    texts = [item.text for item in data.items]
    qtexts = [q.text for q in data.questions]
    vecs = embed(texts + qtexts)
    col = Collection(name, [words(t) for t in texts], vecs[: len(texts)])
    sessions = [item.session for item in data.items]
    spaces: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, item in enumerate(data.items):
        spaces[item.namespace].append(i)
    for q, qv in zip(data.questions, vecs[len(texts) :], strict=True):

        def judge(ranked: Sequence[int], answers: frozenset[str] = q.answers) -> float:
            return longmemeval.recall_at([sessions[i] for i in ranked], answers, 5)

        for scope, within in (("global", None), ("namespace", np.array(spaces[q.namespace]))):
            col.cases.append(Case(q.text, qv, scope, within, judge))
    return col


def identifiers() -> Collection:
    """``bench_retrieval.py``'s set: 3,200 memories of 100 users, 200 questions, both scopes."""
    data = memory_set.build()
    texts = [m.text for m in data.memories]
    qtexts = [q.text for q in data.questions]
    vecs = embed(texts + qtexts)
    col = Collection("memory_set", [words(t) for t in texts], vecs[: len(texts)])
    keys = [m.key for m in data.memories]
    users: dict[str, list[int]] = defaultdict(list)
    for i, m in enumerate(data.memories):
        users[m.user].append(i)
    scope: memory_set.Scope
    for q, qv in zip(data.questions, vecs[len(texts) :], strict=True):
        for scope in ("user", "global"):
            relevant = data.relevant(q, scope)

            def judge(ranked: Sequence[int], relevant: set[str] = relevant) -> float:
                top = {keys[i] for i in ranked[:5]}
                return len(relevant & top) / min(5, len(relevant))

            within = np.array(users[q.user]) if scope == "user" else None
            col.cases.append(Case(q.text, qv, scope, within, judge, q.kind))
    return col


# --------------------------------------------------------------------------- the two sides


@dataclass
class Sides:
    """What a fusion gets for one case: the vector page and the lexical candidates (item index,
    score; best first), each lexical candidate's share of the query's IDF mass, the cosine of
    any item (for designs that re-rank a candidate set), each candidate's rank by cosine in the
    scope (1 + the items with a higher cosine), and the scope's size and mean and standard
    deviation of cosines to the query (for designs with a scale-free vector unit), and the query's
    IDF mass (``mass``: the IDF of its words, unseen ones included)."""

    vector: list[tuple[int, float]]
    lexical: list[tuple[int, float]]
    coverage: dict[int, float]
    cosines: dict[int, float]
    ranks: dict[int, int]
    mass: float
    size: int
    mu: float
    sd: float

    def cosine(self, item: int) -> float:
        """The cosine of a candidate of either side."""
        return self.cosines[item]


def selected(col: Collection, case: Case, chosen: Sequence[str]) -> np.ndarray:
    """The items in ``case``'s scope holding any of the words ``chosen``."""
    held = [col.postings[w] for w in chosen]
    cands = np.unique(np.concatenate(held)) if held else np.array([], dtype=int)
    if case.within is not None and len(cands):
        cands = np.intersect1d(cands, case.within)
    return cands


def sides(col: Collection, case: Case, lexical: str) -> Sides:
    """The two sides of ``case`` as a store builds them (see the module docstring)."""
    sims = col.vecs @ case.vec
    pool = case.within if case.within is not None else np.arange(len(col.tokens))
    order = pool[np.argsort(-sims[pool], kind="stable")[:PAGE]]
    vector = [(int(i), float(sims[i])) for i in order]
    qw = query_words(case.text)
    counts = {w: col.counts(w, case.within)[1] for w in qw}
    rare = SPEC.rare(counts, col.size(case.within), PAGE)
    cands = selected(col, case, [w for w in rare if counts[w]])
    for w in sorted((w for w in qw if counts[w] and w not in rare), key=counts.__getitem__):
        if len(cands) >= FILL:
            break
        rare.append(w)
        cands = selected(col, case, [w for w in rare if counts[w]])
    mass = {w: col.idf(w, case.within) for w in qw if counts[w] or UNSEEN}
    total = sum(mass.values()) or 1.0
    cover = {}
    for i in cands:
        held = set(col.tokens[i])
        cover[int(i)] = sum(v for w, v in mass.items() if w in held) / total
    if lexical == "idf":
        scored = [cover[int(i)] * total for i in cands]
    else:
        scored = bm25(qw, [col.tokens[i] for i in cands], corpus=col.corpus)
    ranked = sorted(zip(cands.tolist(), scored, strict=True), key=lambda p: (-p[1], p[0]))
    lex = [(i, s) for i, s in ranked[:LEXICAL_DEPTH] if s > 0]
    union = {i for i, _ in vector} | {i for i, _ in lex}
    ranked_sims = np.sort(sims[pool])
    ranks = {
        i: int(len(pool) - np.searchsorted(ranked_sims, sims[i], side="right")) + 1 for i in union
    }
    return Sides(
        vector,
        lex,
        {i: cover[i] for i, _ in lex},
        {i: float(sims[i]) for i in union},
        ranks,
        total,
        len(pool),
        float(sims[pool].mean()),
        float(sims[pool].std()),
    )


# --------------------------------------------------------------------------- the designs


def union_of(s: Sides) -> set[int]:
    """The candidates of either side."""
    return {i for i, _ in s.vector} | {i for i, _ in s.lexical}


def minmax(side: Sequence[tuple[int, float]]) -> dict[int, float]:
    """A side's scores scaled to 0..1 over its candidates (all 1 when equal)."""
    if not side:
        return {}
    lo, hi = min(s for _, s in side), max(s for _, s in side)
    if not hi > lo:
        return {i: 1.0 for i, _ in side}
    return {i: (s - lo) / (hi - lo) for i, s in side}


def ordered(scores: dict[int, float], s: Sides) -> list[int]:
    """Best first; ties keep the vector ranking's order, then the lexical one's."""
    first: dict[int, int] = {}
    for n, (i, _) in enumerate(s.vector + s.lexical):
        first.setdefault(i, n)
    return sorted(scores, key=lambda i: (-scores[i], first.get(i, 10**9)))


def mean(*parts: tuple[dict[int, float], float]) -> dict[int, float]:
    """Weighted sum of scaled sides (a side missing an item adds 0)."""
    out: dict[int, float] = defaultdict(float)
    for scores, w in parts:
        for i, v in scores.items():
            out[i] += w * v
    return out


def kept(s: Sides) -> list[int]:
    """Relative-score fusion, min-max, 1:1 (the stores' default)."""
    return ordered(mean((minmax(s.vector), 1.0), (minmax(s.lexical), 1.0)), s)


def best_coverage(s: Sides) -> float:
    """Share of the query's IDF mass that the lexical side's best candidate holds."""
    return s.coverage[s.lexical[0][0]] if s.lexical else 0.0


def coverage(s: Sides) -> list[int]:
    """Min-max sides, the lexical one weighted by its best candidate's share of the query's IDF
    mass, the vector one by the rest."""
    c = best_coverage(s)
    return ordered(mean((minmax(s.vector), 1.0 - c), (minmax(s.lexical), c)), s)


def coverage_lex(s: Sides) -> list[int]:
    """Min-max sides, vector weight 1, lexical weight its best candidate's IDF share."""
    c = best_coverage(s)
    return ordered(mean((minmax(s.vector), 1.0), (minmax(s.lexical), c)), s)


def coverage_item(s: Sides) -> list[int]:
    """Min-max vector side plus each lexical candidate's own IDF share (absolute, 0..1)."""
    return ordered(mean((minmax(s.vector), 1.0), (s.coverage, 1.0)), s)


def absolute(s: Sides) -> list[int]:
    """Absolute scales: cosine as is, plus each lexical candidate's IDF share."""
    return ordered(mean((dict(s.vector), 1.0), (s.coverage, 1.0)), s)


def absolute_union(s: Sides) -> list[int]:
    """Absolute scales over the union of both candidate sets (every candidate's cosine)."""
    union = union_of(s)
    return ordered({i: s.cosine(i) + s.coverage.get(i, 0.0) for i in union}, s)


def union_relative(s: Sides) -> list[int]:
    """Cosine of the union of both candidate sets min-max scaled over the union, plus each
    lexical candidate's IDF share (absolute)."""
    union = union_of(s)
    vec = minmax([(i, s.cosine(i)) for i in union])
    return ordered(mean((vec, 1.0), (s.coverage, 1.0)), s)


def union_coverage(s: Sides) -> list[int]:
    """Cosine of the union min-max scaled over it, weighted 1 - c, and the min-max lexical side
    weighted c, the best lexical candidate's IDF share."""
    c = best_coverage(s)
    union = union_of(s)
    vec = minmax([(i, s.cosine(i)) for i in union])
    return ordered(mean((vec, 1.0 - c), (minmax(s.lexical), c)), s)


def union_cov_item(s: Sides) -> list[int]:
    """Cosine of the union min-max scaled over it, weighted 1 - c, plus each lexical candidate's
    IDF share weighted c (c: the best candidate's share)."""
    c = best_coverage(s)
    union = union_of(s)
    vec = minmax([(i, s.cosine(i)) for i in union])
    return ordered(mean((vec, 1.0 - c), (s.coverage, c)), s)


def union_best(s: Sides) -> list[int]:
    """Cosine of the union over the best cosine (the vector page's first), plus each lexical
    candidate's IDF share."""
    union = union_of(s)
    best = max(s.vector[0][1], 1e-9) if s.vector else 1.0
    return ordered({i: s.cosine(i) / best + s.coverage.get(i, 0.0) for i in union}, s)


def page_best(s: Sides) -> list[int]:
    """The vector page's cosines over its best, plus each lexical candidate's IDF share."""
    best = max(s.vector[0][1], 1e-9) if s.vector else 1.0
    return ordered(mean(({i: v / best for i, v in s.vector}, 1.0), (s.coverage, 1.0)), s)


def union_weighted(s: Sides) -> list[int]:
    """Absolute scales over the union, the lexical side weighted by its best candidate's IDF
    share: cosine + c x each candidate's share."""
    c = best_coverage(s)
    union = union_of(s)
    return ordered({i: s.cosine(i) + c * s.coverage.get(i, 0.0) for i in union}, s)


def union_squared(s: Sides) -> list[int]:
    """Absolute scales over the union, each candidate's IDF share weighted by itself."""
    union = union_of(s)
    return ordered({i: s.cosine(i) + s.coverage.get(i, 0.0) ** 2 for i in union}, s)


def union_agree(s: Sides) -> list[int]:
    """Absolute scales over the union, each candidate's IDF share weighted by its cosine over the
    page's best (the vector side's agreement that the item is about the query)."""
    union = union_of(s)
    best = max(s.vector[0][1], 1e-9) if s.vector else 1.0
    scores = {i: s.cosine(i) + s.coverage.get(i, 0.0) * max(0.0, s.cosine(i)) / best for i in union}
    return ordered(scores, s)


def union_rrf(s: Sides) -> list[int]:
    """Rank fusion (k 60) over the union: every candidate ranked by cosine, and by IDF share."""
    union = sorted(union_of(s))
    out: dict[int, float] = defaultdict(float)
    for key in (s.cosine, lambda i: s.coverage.get(i, 0.0)):
        for rank, i in enumerate(sorted(union, key=lambda i: -key(i)), 1):
            out[i] += 1.0 / (60 + rank)
    return ordered(out, s)


def combmnz(s: Sides) -> list[int]:
    """CombMNZ: min-max sum times the number of sides that returned the item."""
    v, lx = minmax(s.vector), minmax(s.lexical)
    out = mean((v, 1.0), (lx, 1.0))
    return ordered({i: x * ((i in v) + (i in lx)) for i, x in out.items()}, s)


def union_minmax(s: Sides) -> list[int]:
    """Vector scores of the union of both candidate sets, min-max over the union, plus the
    min-max lexical side: a lexical candidate is not scored 0 on the vector side."""
    union = union_of(s)
    vec = minmax([(i, s.cosine(i)) for i in union])
    return ordered(mean((vec, 1.0), (minmax(s.lexical), 1.0)), s)


def overlap(s: Sides) -> list[int]:
    """Union re-ranked by cosine (min-max over the union) plus the min-max lexical side weighted
    by how much of the vector page the lexical candidates hold (1 + share)."""
    union = union_of(s)
    vec = minmax([(i, s.cosine(i)) for i in union])
    share = len({i for i, _ in s.vector} & {i for i, _ in s.lexical}) / PAGE
    return ordered(mean((vec, 1.0), (minmax(s.lexical), 1.0 + share)), s)


def rrf_ties(s: Sides) -> list[int]:
    """Rank fusion (k 60) whose ranks are shared by equal scores, ties broken by min-max sum."""
    out: dict[int, float] = defaultdict(float)
    for side in (s.vector, s.lexical):
        rank, last = 0, None
        for n, (i, v) in enumerate(side, 1):
            if v != last:
                rank, last = n, v
            out[i] += 1.0 / (60 + rank)
    tie = mean((minmax(s.vector), 1.0), (minmax(s.lexical), 1.0))
    return sorted(out, key=lambda i: (-out[i], -tie.get(i, 0.0)))


def information(s: Sides) -> list[int]:
    """Both sides in nats over the union: ``ln(N / rank)`` (rank of the item's cosine in the
    scope of N items) plus the IDF of the query words it holds (:data:`IDF`'s form)."""
    return ordered(
        {i: math.log(s.size / s.ranks[i]) + s.coverage.get(i, 0.0) * s.mass for i in union_of(s)},
        s,
    )


def normal_rank(s: Sides, i: int) -> float:
    """An item's rank in the scope estimated from its cosine's z-score over the scope (normal
    tail), at least 1."""
    z = (s.cosine(i) - s.mu) / max(s.sd, 1e-12)
    return max(1.0, s.size * 0.5 * math.erfc(z / math.sqrt(2.0)))


def information_normal(s: Sides) -> list[int]:
    """``information`` with the rank estimated from the scope's mean and deviation of cosines."""
    return ordered(
        {
            i: math.log(s.size / normal_rank(s, i)) + s.coverage.get(i, 0.0) * s.mass
            for i in union_of(s)
        },
        s,
    )


def logrank(s: Sides) -> list[int]:
    """Over the union: ``1 - ln(rank) / ln(N)`` (the vector side's information over its most)
    plus the IDF share."""
    return ordered(
        {
            i: 1.0 - math.log(s.ranks[i]) / math.log(s.size) + s.coverage.get(i, 0.0)
            for i in union_of(s)
        },
        s,
    )


def anchored(s: Sides) -> list[int]:
    """Over the union: cosine anchored at the scope's mean over the page's best,
    ``(cos - mean) / (best - mean)``, plus the IDF share."""
    best = s.vector[0][1] if s.vector else 1.0
    span = max(best - s.mu, 1e-12)
    return ordered(
        {i: (s.cosine(i) - s.mu) / span + s.coverage.get(i, 0.0) for i in union_of(s)}, s
    )


def page_floor(s: Sides) -> list[int]:
    """``absolute_union`` counting only the IDF share a candidate holds above the share of the
    lexical side's (page + 1)-th candidate: what more than a page of candidates share cannot
    choose the page."""
    shares = sorted(s.coverage.values(), reverse=True)
    floor = shares[PAGE] if len(shares) > PAGE else 0.0
    return ordered(
        {i: s.cosine(i) + max(0.0, s.coverage.get(i, 0.0) - floor) for i in union_of(s)}, s
    )


def information_squared(s: Sides) -> list[int]:
    """``information`` with each candidate's IDF sum weighted by its share of the query's mass."""
    return ordered(
        {
            i: math.log(s.size / s.ranks[i]) + s.coverage.get(i, 0.0) ** 2 * s.mass
            for i in union_of(s)
        },
        s,
    )


def information_floor(s: Sides) -> list[int]:
    """``information`` counting only the IDF a candidate holds above the lexical side's
    (page + 1)-th candidate's (what more than a page of candidates share cannot choose it)."""
    shares = sorted(s.coverage.values(), reverse=True)
    floor = shares[PAGE] if len(shares) > PAGE else 0.0
    return ordered(
        {
            i: math.log(s.size / s.ranks[i]) + max(0.0, s.coverage.get(i, 0.0) - floor) * s.mass
            for i in union_of(s)
        },
        s,
    )


def lexical_page(s: Sides) -> dict[int, float]:
    """Each lexical candidate's IDF (the sum over the query words it holds), counted only when it
    holds more of the query's IDF than the lexical side's (page + 1)-th candidate: what more than
    a page of candidates share cannot choose the page."""
    shares = sorted(s.coverage.values(), reverse=True)
    floor = shares[PAGE] if len(shares) > PAGE else 0.0
    return {i: c * s.mass for i, c in s.coverage.items() if c > floor}


def union_ranks(s: Sides) -> dict[int, int]:
    """Each candidate's rank by cosine among the union of both sides (1 + those with a higher
    cosine): the vector page's ranks are its true ones, the rest's an underestimate."""
    cos = sorted((s.cosine(i) for i in union_of(s)), reverse=True)
    return {i: 1 + sum(1 for c in cos if c > s.cosine(i)) for i in union_of(s)}


def information_page(s: Sides) -> list[int]:
    """``information`` with the lexical IDF of :func:`lexical_page`."""
    lex = lexical_page(s)
    return ordered({i: math.log(s.size / s.ranks[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def information_union(s: Sides) -> list[int]:
    """``information`` with ranks among the union of both sides (what a store knows)."""
    ranks = union_ranks(s)
    return ordered(
        {i: -math.log(ranks[i]) + s.coverage.get(i, 0.0) * s.mass for i in union_of(s)}, s
    )


def information_page_union(s: Sides) -> list[int]:
    """``information_page`` with ranks among the union of both sides (what a store knows)."""
    ranks, lex = union_ranks(s), lexical_page(s)
    return ordered({i: -math.log(ranks[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def information_page_normal(s: Sides) -> list[int]:
    """``information_page`` with ranks estimated from the scope's mean and deviation of cosines."""
    lex = lexical_page(s)
    return ordered(
        {i: math.log(s.size / normal_rank(s, i)) + lex.get(i, 0.0) for i in union_of(s)}, s
    )


def information_page_mixed(s: Sides) -> list[int]:
    """``information_page`` with the vector page's true ranks and the other candidates' estimated
    from the scope's mean and deviation of cosines (at least the page's size + 1)."""
    lex, page = lexical_page(s), {i: n for n, (i, _) in enumerate(s.vector, 1)}
    rank = {i: page.get(i) or max(PAGE + 1.0, normal_rank(s, i)) for i in union_of(s)}
    return ordered({i: math.log(s.size / rank[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def information_tied(s: Sides) -> list[int]:
    """``information`` giving no lexical IDF to candidates whose share of the query's IDF more
    than a page of candidates hold exactly (tied on the same words, they cannot choose the page)."""
    ties: dict[float, int] = defaultdict(int)
    for c in s.coverage.values():
        ties[c] += 1
    lex = {i: c * s.mass for i, c in s.coverage.items() if ties[c] <= PAGE}
    return ordered({i: math.log(s.size / s.ranks[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def information_page_deep(s: Sides) -> list[int]:
    """``information_page`` knowing the ranks of a vector page as deep as the lexical side's
    (``HybridSpec.candidates``); a candidate past it counts as ranked just after it."""
    lex = lexical_page(s)
    rank = {i: min(s.ranks[i], LEXICAL_DEPTH + 1) for i in union_of(s)}
    return ordered({i: math.log(s.size / rank[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def information_page_sampled(s: Sides) -> list[int]:
    """``information_page`` with the vector page's own ranks and every other candidate's rank
    estimated by taking the candidates off the page as a sample of the rest of the scope."""
    lex, page = lexical_page(s), {i: n for n, (i, _) in enumerate(s.vector, 1)}
    rest = sorted((s.cosine(i) for i in union_of(s) if i not in page), reverse=True)
    rank = {
        i: page.get(i)
        or PAGE + (s.size - PAGE) * sum(1 for c in rest if c >= s.cosine(i)) / len(rest)
        for i in union_of(s)
    }
    return ordered({i: math.log(s.size / rank[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)


def tie_cut(s: Sides, tie: dict[int, float], nats: dict[int, float]) -> dict[int, float]:
    """``nats`` of each lexical candidate, except where more than a page of candidates share its
    ``tie`` value, or the lexical side's cut runs through it (its last candidate's, when it
    returned its full depth): tied on the same words, they cannot choose the page."""
    ties = Counter(tie.values())
    last = tie[s.lexical[-1][0]] if len(s.lexical) >= LEXICAL_DEPTH else None
    return {i: nats[i] for i, t in tie.items() if ties[t] <= PAGE and t != last}


def lexical_tied_cut(s: Sides) -> dict[int, float]:
    """Each lexical candidate's IDF sum, tied by its share of the query's IDF (:func:`tie_cut`)."""
    return tie_cut(s, s.coverage, {i: c * s.mass for i, c in s.coverage.items()})


def lexical_own_tied_cut(s: Sides) -> dict[int, float]:
    """:func:`lexical_tied_cut` on the lexical side's own scores (BM25, or the IDF sum under
    ``--lexical idf``, where the two are the same): what a store whose lexical score is BM25 (Redis)
    has without knowing which query words each candidate holds; ties are equal scores."""
    return tie_cut(s, {i: round(v, 9) for i, v in s.lexical}, dict(s.lexical))


def rank_estimates(s: Sides, how: str) -> dict[int, float]:
    """Each candidate's cosine rank in the scope: ``exact``; ``union`` (among both sides);
    ``page`` (the page's own, every other candidate just past it: no cosine needed);
    ``mixed`` (the page's own, the rest from a normal tail); ``sampled`` (the page's own, the rest
    from their place among the candidates off the page, taken as a sample of the scope)."""
    if how == "exact":
        return {i: float(r) for i, r in s.ranks.items()}
    if how == "union":
        return {i: float(r) for i, r in union_ranks(s).items()}
    page = {i: float(n) for n, (i, _) in enumerate(s.vector, 1)}
    if how == "page":
        return {i: page.get(i) or PAGE + 1.0 for i in union_of(s)}
    if how == "mixed":
        return {i: page.get(i) or max(PAGE + 1.0, normal_rank(s, i)) for i in union_of(s)}
    rest = [s.cosine(i) for i in union_of(s) if i not in page]
    return {
        i: page.get(i) or PAGE + (s.size - PAGE) * sum(c >= s.cosine(i) for c in rest) / len(rest)
        for i in union_of(s)
    }


def tied_cut(
    how: str, lexical: Callable[[Sides], dict[int, float]] = lexical_tied_cut
) -> Callable[[Sides], list[int]]:
    """``information`` with ``lexical``'s nats (:func:`lexical_tied_cut`'s IDF by default) and
    ``how`` ranks."""

    def design(s: Sides) -> list[int]:
        lex, rank = lexical(s), rank_estimates(s, how)
        return ordered({i: math.log(s.size / rank[i]) + lex.get(i, 0.0) for i in union_of(s)}, s)

    return design


def information_cov(lexical: Callable[[Sides], dict[int, float]]) -> Callable[[Sides], list[int]]:
    """``information`` with ``lexical``'s IDF and the vector side's nats weighted by the share of
    the query's IDF mass the best lexical candidate does not hold (``1 - c``)."""

    def design(s: Sides) -> list[int]:
        lex, rest = lexical(s), 1.0 - best_coverage(s)
        return ordered(
            {i: rest * math.log(s.size / s.ranks[i]) + lex.get(i, 0.0) for i in union_of(s)}, s
        )

    return design


def vouch(s: Sides) -> list[int]:
    """Min-max sides; the vector side's weight drops by the lexical best candidate's IDF share when
    the vector page lacks that candidate (a strong lexical match the vector side did not find
    vouches against it; a weak one, as in a paraphrase, leaves 1:1)."""
    c = best_coverage(s)
    found = bool(s.lexical) and s.lexical[0][0] in dict(s.vector)
    return ordered(mean((minmax(s.vector), 1.0 if found else 1.0 - c), (minmax(s.lexical), 1.0)), s)


def vouch_score(s: Sides) -> list[int]:
    """As :func:`vouch`, the page's verdict graded: the lexical best candidate's min-max vector
    score on the page (0 off it) in place of found / not found."""
    c = best_coverage(s)
    vec = minmax(s.vector)
    agree = vec.get(s.lexical[0][0], 0.0) if s.lexical else 1.0
    return ordered(mean((vec, 1.0 - c * (1.0 - agree)), (minmax(s.lexical), 1.0)), s)


DESIGNS: dict[str, Callable[[Sides], list[int]]] = {
    "vector": lambda s: [i for i, _ in s.vector],
    "lexical": lambda s: [i for i, _ in s.lexical],
    "kept": kept,
    "coverage": coverage,
    "vouch": vouch,
    "vouch_score": vouch_score,
    "coverage_lex": coverage_lex,
    "coverage_item": coverage_item,
    "absolute": absolute,
    "absolute_union": absolute_union,
    "union_relative": union_relative,
    "union_coverage": union_coverage,
    "union_cov_item": union_cov_item,
    "union_best": union_best,
    "page_best": page_best,
    "union_weighted": union_weighted,
    "union_squared": union_squared,
    "union_agree": union_agree,
    "union_rrf": union_rrf,
    "combmnz": combmnz,
    "union_minmax": union_minmax,
    "overlap": overlap,
    "rrf_ties": rrf_ties,
    "information": information,
    "information_normal": information_normal,
    "logrank": logrank,
    "anchored": anchored,
    "page_floor": page_floor,
    "information_squared": information_squared,
    "information_floor": information_floor,
    "information_page": information_page,
    "information_union": information_union,
    "information_page_union": information_page_union,
    "information_page_normal": information_page_normal,
    "information_page_mixed": information_page_mixed,
    "information_tied": information_tied,
    "information_page_deep": information_page_deep,
    "information_page_sampled": information_page_sampled,
    "information_tied_cut": tied_cut("exact"),
    "information_tied_cut_union": tied_cut("union"),
    "information_tied_cut_mixed": tied_cut("mixed"),
    "information_tied_cut_sampled": tied_cut("sampled"),
    "own_tied_cut_union": tied_cut("union", lexical_own_tied_cut),
    "own_tied_cut": tied_cut("exact", lexical_own_tied_cut),
    "information_tied_cut_page": tied_cut("page"),
    "own_tied_cut_page": tied_cut("page", lexical_own_tied_cut),
    "information_page_cov": information_cov(lexical_page),
    "information_tied_cut_cov": information_cov(lexical_tied_cut),
}


# --------------------------------------------------------------------------- the run


def baselines(col: Collection, case: Case) -> dict[str, list[int]]:
    """Exact cosine and plain BM25 over every word, within the case's scope (top 10)."""
    pool = case.within if case.within is not None else np.arange(len(col.tokens))
    sims = col.vecs[pool] @ case.vec
    exact = pool[np.argsort(-sims, kind="stable")[:PAGE]].tolist()
    qw = list(dict.fromkeys(words(case.text)))
    held = [col.postings[w] for w in qw if w in col.postings]
    cands = np.unique(np.concatenate(held)) if held else np.array([], dtype=int)
    if case.within is not None and len(cands):
        cands = np.intersect1d(cands, case.within)
    scored = bm25(qw, [col.tokens[i] for i in cands], corpus=col.corpus)
    ranked = sorted(zip(cands.tolist(), scored, strict=True), key=lambda p: (-p[1], p[0]))
    return {"exact": exact, "bm25": [i for i, _ in ranked[:PAGE]]}


def prepared(col: Collection, lexical: str) -> list[tuple[Sides, dict[str, list[int]]]]:
    """Each case's sides and baselines, cached under ``benchmarks/.cache`` per data set, lexical
    scoring and unseen-word rule (they take minutes to compute on the conversation sets)."""
    tag = cache_tag(col.name) + ("" if IDF == "bm25" else f"-{IDF}")
    tag += f"-share{SPEC.rare_share}" + ("-scoped" if SCOPE_STATS else "")
    tag += f"-fill{FILL}" if FILL else ""
    path = os.path.join(CACHE_DIR, f"fusion-sides2-{tag}-{lexical}-{int(UNSEEN)}-{DIMS}.pkl")
    if not os.path.exists(path):
        out = [
            (sides(col, case, lexical), baselines(col, case) if col.name != "memory_set" else {})
            for case in col.cases
        ]
        with open(path, "wb") as f:  # plain values: readable whoever imports this module
            pickle.dump([(astuple(s), base) for s, base in out], f)
        return out
    with open(path, "rb") as f:
        return [(Sides(*fields), base) for fields, base in pickle.load(f)]


def study(col: Collection, designs: Sequence[str], lexical: str) -> dict[str, dict[str, float]]:
    """recall@5 per design (and baseline) per column (scope, and group for memory_set)."""
    got: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for case, (s, base) in zip(col.cases, prepared(col, lexical), strict=True):
        rankings = {name: DESIGNS[name](s)[:PAGE] for name in designs}
        rankings.update(base)
        for name, ranked in rankings.items():
            r = case.judge(ranked)
            got[name][case.scope].append(r)
            if case.group != "all":
                got[name][f"{case.scope} {case.group[:4]}"].append(r)
    return {n: {c: statistics.fmean(v) for c, v in cols.items()} for n, cols in got.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Print recall@5 of every design asked for on every data set asked for, one table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="lme,locomo,memory_set")
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--lexical", choices=("bm25", "idf"), default="bm25")
    p.add_argument(
        "--skip-unseen", action="store_true", help="leave words no text holds out of the IDF mass"
    )
    p.add_argument(
        "--dims", type=int, choices=(64, 128, 256), default=256, help="WordLlama's truncation"
    )
    p.add_argument("--embedder", choices=("wordllama", "glove", "minilm"), default="wordllama")
    p.add_argument(
        "--idf", choices=("bm25", "plain"), default="bm25", help="the IDF form of the IDF sums"
    )
    p.add_argument(
        "--rare-share",
        type=float,
        default=HybridSpec().rare_share,
        help="HybridSpec.rare_share: the share of the texts a selecting word is held by at most",
    )
    p.add_argument(
        "--scope-stats",
        action="store_true",
        help="count a namespace search's words over the namespace, not the collection",
    )
    p.add_argument(
        "--fill",
        type=int,
        default=0,
        help="let the next rarest words select while the rare ones select fewer candidates",
    )
    args = p.parse_args(argv)
    global UNSEEN, DIMS, EMBEDDER, IDF, SPEC, SCOPE_STATS, FILL
    UNSEEN, EMBEDDER, IDF = not args.skip_unseen, args.embedder, args.idf
    SCOPE_STATS, FILL = args.scope_stats, args.fill
    SPEC = HybridSpec(rare_share=args.rare_share)
    DIMS = {"wordllama": args.dims, "glove": GLOVE_DIMS, "minilm": MINILM_DIMS}[EMBEDDER]
    designs = args.designs.split(",")
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for name in args.data.split(","):
        col = identifiers() if name == "memory_set" else conversations(name)
        for design, cols in study(col, designs, args.lexical).items():
            table[design].update({f"{name} {c}": v for c, v in cols.items()})
    columns = sorted({c for cols in table.values() for c in cols})
    label = {"wordllama": "WordLlama", "glove": "GloVe 6B", "minilm": "all-MiniLM-L6-v2"}[EMBEDDER]
    print(f"recall@5, lexical side scored by {args.lexical}, IDF {IDF}, {label} {DIMS}-d")
    print("| design | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for design, cols in table.items():
        print(
            f"| {design} | "
            + " | ".join(f"{cols.get(c, float('nan')):.3f}" for c in columns)
            + " |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
