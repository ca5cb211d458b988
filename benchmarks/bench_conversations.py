"""Retrieval on public conversational-memory data: LongMemEval (oracle split, :mod:`benchmarks.
longmemeval`), every mode side by side in one run (#26).

The 5,437 rounds of LongMemEval's 940 sessions are loaded into one collection (index ``["text"]``,
WordLlama's bundled 256-d model for every mode, or ``--embedder glove`` GloVe 6B 50-d word means
(``benchmarks/glove_embeddings.py``, the second, unrelated embedder) or ``--embedder minilm``
all-MiniLM-L6-v2 (``benchmarks/minilm_embeddings.py``, a contextual sentence model; its vectors
are kept on disk after the first run), each text embedded once before any store is loaded,
so no store pays for the model inside a timed search) and its 470 non-abstention questions are
searched with ``limit=10`` in two scopes: **global** (the whole collection) and **namespace** (the
question's user, ``("lme", "u<n>")``, about a tenth of it). Modes:

- ``exact``: cosine similarity over the same vectors (numpy), the vector side's ceiling;
- ``bm25``: plain Okapi BM25 over every word of the question (k1 1.2, b 0.75, words as
  ``core.hybrid.words`` finds them), computed here: the lexical baseline;
- ``vector`` / ``hybrid``: our store per backend, ``index`` without / with ``"hybrid": True``
  (both opened on the one loaded table or prefix, each with its own search calibration);
  ``hybrid:<fusion>`` (e.g. ``hybrid:information``) or ``hybrid:<lexical weight>``: a hybrid store
  with that option (``retrieval_stores.hybrid_option``) on the same table or prefix;
- ``official``: langgraph's own store for the backend (its tables or prefixes), vector search;
- ``episodic``: ``EpisodicMemory.recall(question, k=10)`` on our hybrid store, each round recorded
  as an episode at its session's date (namespace scope only: a tier lives in one namespace);
  ``episodic:<fusion>`` (e.g. ``episodic:information``): the same on a hybrid store with that
  fusion (the tier blends the store's 0..1 score with recency, so the fusion's scale matters).

Per mode, backend and scope: recall@5 and recall@10 (share of the question's answer sessions with
an item in the top k), hit@5, MRR@10, the paper's session-level ``recall_all@5`` (rounds widened to
5 distinct sessions within the 10 returned), per question type too, and the mean ms per search call;
and ``exact@10``, the share of the exact top 10 (of the scope, same vectors) that the search returned
(an item tied with the exact 10th counts), over all questions and over the first 10 searches after
the load (``first10``: a store searches before any calibration of its own has been measured).

``--data locomo`` runs the same modes on LoCoMo instead (``benchmarks/locomo.py``: its ten
conversations' turns pooled, global scope all of them, namespace scope the question's
conversation; recall@k is then the share of the question's evidence turns in the top k): the
second, unrelated data set a rule chosen on LongMemEval is checked on.

Examples::

    python benchmarks/bench_conversations.py --quick      # CI: 60 questions, their sessions
    python benchmarks/bench_conversations.py              # the full set (a few minutes)
    python benchmarks/bench_conversations.py --backends postgres --json out.json
    python benchmarks/bench_conversations.py --data locomo
    python benchmarks/bench_conversations.py --backends postgres --text-config english  # stemming

Without the data (no network to PyPI, a different file) it says why and exits 0. Servers:
``--dsn`` / ``LANGMEM_BENCH_POSTGRES_DSN``, ``--url`` / ``LANGMEM_BENCH_REDIS_URL`` (else local
ones are started).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_retrieval import Precomputed, embedded
from benchmarks.locomo import load as load_locomo
from benchmarks.longmemeval import (
    Collection,
    DataUnavailable,
    Question,
    hit_at,
    load,
    mrr_at,
    recall_all_sessions,
    recall_at,
)
from benchmarks.retrieval_stores import BACKENDS, hybrid_option
from langmem_adapters.core.bm25 import bm25
from langmem_adapters.core.hybrid import words
from langmem_adapters.memory import EpisodicMemory

LIMIT = 10
SCOPES = ("global", "namespace")
METRICS = ("recall@5", "recall@10", "hit@5", "mrr@10", "recall_all@5", "exact@10")
#: Searches after the load whose ``exact@10`` is reported apart (``first10``).
FIRST = 10
#: How each embedder of ``--embedder`` is named in the report.
EMBEDDER_NAMES = {
    "wordllama": "WordLlama 256-d",
    "glove": "GloVe 6B 50-d",
    "minilm": "all-MiniLM-L6-v2 384-d",
}

#: The data sets: LongMemEval's oracle split (the default) and LoCoMo, the second, unrelated one a
#: rule chosen on the first is checked on (``benchmarks/locomo.py``).
DATA: dict[str, Callable[[], Collection]] = {"longmemeval": load, "locomo": load_locomo}


@dataclass(frozen=True)
class Ranking:
    """A search's results, best first: each one's session id, and its item key where the mode
    returns the collection's items (``None``: the episodic tier, which stores episodes)."""

    sessions: list[str]
    keys: list[str] | None = None


Ranker = Callable[[Question, str], Ranking]
"""A mode's search: (question, scope) -> its ranking."""


def scores(ranked: Sequence[str], q: Question, exact10: float) -> dict[str, float]:
    """Every metric of one question's ranking (session id per result, best first)."""
    return {
        "recall@5": recall_at(ranked, q.answers, 5),
        "recall@10": recall_at(ranked, q.answers, 10),
        "hit@5": hit_at(ranked, q.answers, 5),
        "mrr@10": mrr_at(ranked, q.answers, 10),
        "recall_all@5": recall_all_sessions(ranked, q.answers, 5),
        "exact@10": exact10,
    }


def measure(data: Collection, rank: Ranker, scope: str, base: Baselines) -> dict[str, Any]:
    """Mean of every metric over the questions (overall and per question type), ``exact@10`` over
    the first :data:`FIRST` searches, and the mean ms of a ranking call."""
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    times = []
    for q in data.questions:
        start = time.perf_counter()
        ranked = rank(q, scope)
        times.append((time.perf_counter() - start) * 1000)
        share = math.nan if ranked.keys is None else base.exact_share(q, scope, ranked.keys)
        s = scores(ranked.sessions, q, share)
        per["all"].append(s)
        per[q.qtype].append(s)
    out: dict[str, Any] = {
        kind: {m: statistics.fmean(s[m] for s in rows) for m in METRICS}
        for kind, rows in per.items()
    }
    out["first10"] = statistics.fmean(s["exact@10"] for s in per["all"][:FIRST])
    out["ms"] = statistics.fmean(times)
    return out


# --------------------------------------------------------------------------- baselines


class Baselines:
    """Exact cosine and plain BM25 over the collection, per scope."""

    def __init__(self, data: Collection, embed: Precomputed) -> None:
        self.data = data
        self.sessions = [i.session for i in data.items]
        self.keys = [i.key for i in data.items]
        self.row = {key: n for n, key in enumerate(self.keys)}
        vectors = np.asarray(embed.embed_documents([i.text for i in data.items]), np.float64)
        self.unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.embed = embed
        self.texts = [words(i.text) for i in data.items]
        self.ns = [i.namespace for i in data.items]

    def _mask(self, q: Question, scope: str) -> np.ndarray:
        if scope == "global":
            return np.ones(len(self.ns), bool)
        return np.array([ns == q.namespace for ns in self.ns])

    def _top(self, s: np.ndarray, mask: np.ndarray) -> Ranking:
        s = np.where(mask, s, -np.inf)
        top = [i for i in np.argsort(-s, kind="stable")[:LIMIT] if np.isfinite(s[i])]
        return Ranking([self.sessions[i] for i in top], [self.keys[i] for i in top])

    def _cosines(self, q: Question) -> np.ndarray:
        v = np.asarray(self.embed.embed_query(q.text), np.float64)
        return self.unit @ (v / max(float(np.linalg.norm(v)), 1e-12))

    def exact(self, q: Question, scope: str) -> Ranking:
        """Cosine similarity to every item (of the scope)."""
        return self._top(self._cosines(q), self._mask(q, scope))

    def exact_share(self, q: Question, scope: str, keys: Sequence[str]) -> float:
        """Share of the scope's exact top 10 among ``keys``: a returned item of the scope counts
        when its cosine is at least the exact 10th's (so ties with it count too)."""
        mask = self._mask(q, scope)
        cos = np.where(mask, self._cosines(q), -np.inf)
        want = min(LIMIT, int(mask.sum()))
        if want == 0:
            return 1.0
        tenth = np.partition(-cos, want - 1)[want - 1] * -1
        rows = {self.row[k] for k in keys if k in self.row}
        found = sum(1 for r in rows if mask[r] and cos[r] >= tenth - 1e-9)
        return min(found, want) / want

    def bm25(self, q: Question, scope: str) -> Ranking:
        """Plain BM25 (k1 1.2, b 0.75) over every word of the question, statistics of the whole
        collection; items sharing no word are not ranked."""
        s = np.asarray(bm25(words(q.text), self.texts))
        return self._top(np.where(s > 0, s, -np.inf), self._mask(q, scope))


# --------------------------------------------------------------------------- stores


def puts(data: Collection) -> list[PutOp]:
    """Every round as an item of its user's namespace."""
    return [PutOp(i.namespace, i.key, i.value) for i in data.items]


def load_store(store: BaseStore, ops: Sequence[PutOp], batch: int = 500) -> None:
    for start in range(0, len(ops), batch):
        store.batch(list(ops[start : start + batch]))


def store_ranker(store: BaseStore) -> Ranker:
    """A store's search as a ranking of session ids."""

    def rank(q: Question, scope: str) -> Ranking:
        prefix = q.namespace[:1] if scope == "global" else q.namespace
        found = store.search(prefix, query=q.text, limit=LIMIT)
        return Ranking([str(item.value["session"]) for item in found], [i.key for i in found])

    return rank


def episodic_ranker(store: BaseStore, data: Collection) -> Ranker:
    """``EpisodicMemory.recall`` on ``store`` with every round recorded in its user's log."""
    logs: dict[tuple[str, ...], EpisodicMemory] = {}
    for item in data.items:
        log = logs.setdefault(item.namespace, EpisodicMemory(store, namespace=item.namespace))
        when = datetime.strptime(item.date[:10], "%Y/%m/%d").replace(tzinfo=timezone.utc)
        log.record(item.text, occurred_at=when, thread_id=item.session)

    def rank(q: Question, scope: str) -> Ranking:
        return Ranking([str(e.thread_id) for e in logs[q.namespace].recall(q.text, k=LIMIT)])

    return rank


def backend_modes(
    backend: str,
    server: str,
    embed: Precomputed,
    data: Collection,
    modes: Sequence[str],
    text_config: str | None = None,
) -> Iterator[tuple[str, Ranker, tuple[str, ...]]]:
    """(mode, ranker, scopes) of each store mode on ``backend``; stores closed after use; the
    Postgres hybrid stores parse texts with ``text_config`` (``None``: the default)."""
    _, open_store, settle = BACKENDS[backend]
    if backend == "postgres" and text_config is not None:
        open_store = partial(open_store, text_config=text_config)
    place = f"lme{uuid.uuid4().hex[:6]}"
    ops = puts(data)
    with ExitStack() as stack:
        hybrid = stack.enter_context(open_store(server, embed, "hybrid", place))
        load_store(hybrid, ops)
        settle(server, place)
        if "vector" in modes:
            vector = stack.enter_context(open_store(server, embed, "vector", place))
            yield "vector", store_ranker(vector), SCOPES
        if "hybrid" in modes:
            yield "hybrid", store_ranker(hybrid), SCOPES
        for mode in (m for m in modes if m.startswith("hybrid:")):
            variant = stack.enter_context(open_store(server, embed, mode, place))
            yield mode, store_ranker(variant), SCOPES
        if "official" in modes:
            official = stack.enter_context(open_store(server, embed, "official"))
            if official is not None:  # none on plain Redis
                load_store(official, ops)
                yield "official", store_ranker(official), SCOPES
        for n, mode in enumerate(m for m in modes if m.split(":")[0] == "episodic"):
            store_mode = mode.replace("episodic", "hybrid", 1)
            tier = stack.enter_context(open_store(server, embed, store_mode, f"{place}e{n}"))
            rank = episodic_ranker(tier, data)
            settle(server, f"{place}e{n}")
            yield mode, rank, ("namespace",)


# --------------------------------------------------------------------------- report


def row(name: str, r: dict[str, Any]) -> str:
    ms = "-" if math.isnan(r["ms"]) else f"{r['ms']:.2f}"
    cells = " | ".join(_cell(r["all"][m]) for m in METRICS)
    return f"| {name} | {cells} | {_cell(r['first10'])} | {ms} |"


def _cell(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


def report(results: dict[str, dict[str, Any]], types: Sequence[str]) -> None:
    """Markdown tables: every metric per mode and scope, then recall@5 per question type."""
    for scope in SCOPES:
        rows = {k: v[scope] for k, v in results.items() if scope in v}
        if not rows:
            continue
        print(f"\n{scope} scope\n\n| mode | {' | '.join(METRICS)} | first10 | ms / search |")
        print("|---|" + "---:|" * (len(METRICS) + 2))
        for name, r in rows.items():
            print(row(name, r))
        print(f"\nrecall@5 per question type ({scope})\n\n| mode | {' | '.join(types)} |")
        print("|---|" + "---:|" * len(types))
        for name, r in rows.items():
            print(f"| {name} | " + " | ".join(f"{r[t]['recall@5']:.3f}" for t in types) + " |")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="CI: 60 questions and their sessions")
    p.add_argument(
        "--data",
        default="longmemeval",
        choices=sorted(DATA),
        help="the data set (default LongMemEval)",
    )
    p.add_argument("--questions", type=int, default=None, help="questions (default all 470)")
    p.add_argument(
        "--embedder",
        default="wordllama",
        choices=sorted(EMBEDDER_NAMES),
        help="the text embedder of every mode (default WordLlama)",
    )
    p.add_argument("--backends", default="postgres,redis", help="postgres,redis,redis-plain")
    p.add_argument("--modes", default="exact,bm25,vector,hybrid,official,episodic")
    p.add_argument("--dsn", help="PostgreSQL DSN (default: an embedded server)")
    p.add_argument("--url", help="Redis URL with the Query Engine (default: a local server)")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument(
        "--text-config",
        help="the Postgres hybrid stores' text-search configuration (default: the store's, simple)",
    )
    return p.parse_args(argv)


def conversation_data(name: str, questions: int | None) -> Collection | None:
    """The data set ``name`` of :data:`DATA`, cut to its first ``questions`` questions and their
    sessions (``None``: all); ``None``, said on stdout, when it cannot be had (the benchmark skips)."""
    try:
        data = DATA[name]()
    except DataUnavailable as exc:
        print(f"{name} is not available, skipping: {exc}")
        return None
    return data.subset(questions) if questions else data


def precomputed(data: Collection, embedder: str) -> Precomputed:
    """Every item's and question's vector by ``embedder``, computed once before any store is loaded,
    so the stores' latency excludes the model."""
    return embedded(embedder, [*(i.text for i in data.items), *(q.text for q in data.questions)])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    data = conversation_data(args.data, args.questions or (60 if args.quick else None))
    if data is None:
        return 0
    modes = args.modes.split(",")
    for mode in (m for m in modes if m.startswith(("hybrid:", "episodic:"))):
        # an unknown one stops the run before anything is loaded
        hybrid_option(mode.replace("episodic", "hybrid", 1))
    types = sorted(Counter(q.qtype for q in data.questions))
    embed = precomputed(data, args.embedder)
    print(
        f"{args.data}: {len(data.items)} items of {len(data.sessions)} sessions, "
        f"{len(data.questions)} questions, limit {LIMIT}, {EMBEDDER_NAMES[args.embedder]}"
    )
    results: dict[str, dict[str, Any]] = {}
    base = Baselines(data, embed)
    for name in ("exact", "bm25"):
        if name in modes:
            results[name] = {s: measure(data, getattr(base, name), s, base) for s in SCOPES}
            for s in SCOPES:
                results[name][s]["ms"] = math.nan  # computed here, not a store's search
    for backend in filter(None, args.backends.split(",")):
        resolve = BACKENDS[backend][0]
        server = resolve(args.dsn if backend == "postgres" else args.url)
        stores = backend_modes(backend, server, embed, data, modes, args.text_config)
        for mode, rank, scopes in stores:
            results[f"{backend} {mode}"] = {s: measure(data, rank, s, base) for s in scopes}
    report(results, types)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"questions": len(data.questions), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
