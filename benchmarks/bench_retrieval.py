"""Retrieval quality of vector, lexical and hybrid search on a labeled agent-memory set (#18).

The data is :mod:`benchmarks.memory_set` (3,200 memories of 100 users under ``("memories", user)``,
200 questions: 120 naming an identifier, 80 paraphrasing a fact). Each question is searched within
its user's namespace (``search(("memories", user), query=...)``) and across all users
(``search(("memories",), query=...)``), ``limit=10``, on:

- **ours, vector**: our store with ``index={"dims", "embed", "fields": ["text"]}``;
- **ours, lexical**: the same index with ``"hybrid": {"vector_weight": 0}`` (the vector side leaves
  the fusion, so the page is the lexical ranking alone);
- **ours, hybrid**: ``"hybrid": True`` (reciprocal rank fusion of both rankings, the defaults);
- **official, vector**: langgraph's own store for the backend, same data, same embedder.

Our three modes search **one** loaded table (Postgres) or key prefix (Redis) per embedder, each
store opened on it with its own ``index``, at one vector search setting: the breadth (or exact scan)
the loaded store's own calibration chose, fixed for all three. So the vector ranking inside a
hybrid search is the vector-only store's ranking, and a difference between the modes is the fusion's,
not that of two HNSW graphs built separately or calibrated apart (each build and each calibration
draws at random: three separately loaded vector-only Postgres stores gave 0.463 to 0.487 paraphrase
recall@5 across users, on the same data and vectors). Postgres tables are analyzed after the load,
as autovacuum does soon after: the lexical side reads the planner's statistics. The official store is loaded on its own tables, as a user would have it.

for PostgreSQL and Redis (Query Engine; ``--backends redis-plain`` adds our plain mode, where the
lexical side is BM25 computed client-side and no official store runs), with two embedders: ``HashEmbeddings`` (256-d word
hashing) and ``WordLlamaEmbeddings`` (WordLlama's bundled 256-d static text model, offline), and
``--embedders glove`` GloVe 6B 50-d word means (``benchmarks/glove_embeddings.py``) or ``minilm``
all-MiniLM-L6-v2 (``benchmarks/minilm_embeddings.py``, a contextual sentence model). Every
vector is computed once per embedder before any store is loaded, and every store is given the same
lookup of those vectors, so the latency columns are the stores' own (ms per search call, mean over
the questions, query embedding excluded) and no store pays for the model.

Reported per store and mode: recall@5 (the share of a question's relevant memories in the top 5, out
of ``min(5, relevant)``) and MRR@10 (1 / rank of the first relevant memory in the top 10, else 0),
each for identifier and paraphrase questions in both scopes, and the issue's targets (hybrid - vector
recall@5: >= +10 points on identifier questions, >= -2 points on paraphrase questions, with the
real-text model; hybrid latency <= 1.5x vector).

Examples::

    python benchmarks/bench_retrieval.py --quick      # CI: 10 users, 60 questions, WordLlama
    python benchmarks/bench_retrieval.py              # the full set (a few minutes)
    python benchmarks/bench_retrieval.py --backends postgres --embedders wordllama --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.glove_embeddings import GloveEmbeddings
from benchmarks.longmemeval import CACHE_DIR
from benchmarks.memory_set import MemorySet, Scope, build
from benchmarks.minilm_embeddings import MiniLMEmbeddings
from benchmarks.retrieval_stores import BACKENDS, DIMS, MODES, fixed_search, hybrid_option
from benchmarks.wordllama_embeddings import WordLlamaEmbeddings
from langmem_adapters.embeddings import HashEmbeddings

LIMIT = 10
SCOPES: tuple[Scope, ...] = ("user", "global")
KINDS = ("identifier", "paraphrase")


class Precomputed(Embeddings):
    """Vectors computed once per embedder, looked up by text: every store gets the same vectors
    and none pays the model's cost inside a timed search. Other texts (a store's embedder
    identity probe) go to the model. ``dims``: the model's (:data:`DIMS` without one)."""

    def __init__(self, model: Embeddings, vectors: dict[str, list[float]]) -> None:
        self.model, self.vectors = model, vectors
        self.dims: int = getattr(model, "dims", DIMS)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.model.embed_documents(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


#: The embedders a benchmark can be run with, by name: 256-d ``HashEmbeddings``, WordLlama's bundled
#: 256-d model, GloVe 6B 50-d word means (``benchmarks/glove_embeddings.py``, a second, unrelated
#: real embedder to check WordLlama's numbers with) and all-MiniLM-L6-v2
#: (``benchmarks/minilm_embeddings.py``, a contextual sentence model, the third).
EMBEDDERS: dict[str, Callable[[], Embeddings]] = {
    "hash": partial(HashEmbeddings, DIMS),
    "wordllama": WordLlamaEmbeddings,
    "glove": GloveEmbeddings,
    "minilm": MiniLMEmbeddings,
}
#: Embedders slow enough that :func:`embedded` keeps their vectors of a set of texts on disk
#: (all-MiniLM-L6-v2 takes about 20 minutes for LongMemEval on two cores).
CACHED = frozenset({"minilm"})


def embedder(name: str) -> Embeddings:
    """A new embedder of :data:`EMBEDDERS` by name."""
    if name not in EMBEDDERS:
        raise SystemExit(f"unknown embedder {name!r}; known: {list(EMBEDDERS)}")
    return EMBEDDERS[name]()


def embedded(name: str, texts: Iterable[str]) -> Precomputed:
    """``texts`` embedded once with embedder ``name`` (of :data:`EMBEDDERS`); for the
    :data:`CACHED` ones, once per set of texts, kept under ``benchmarks/.cache``."""
    ordered = sorted(set(texts))
    model = embedder(name)
    if name not in CACHED:
        return Precomputed(model, dict(zip(ordered, model.embed_documents(ordered), strict=True)))
    digest = hashlib.sha256("\0".join(ordered).encode("utf-8", "surrogatepass")).hexdigest()
    path = os.path.join(CACHE_DIR, f"embedded-{name}-{digest[:16]}.npy")
    if os.path.exists(path):
        rows = np.load(path).tolist()
    else:
        rows = model.embed_documents(ordered)
        os.makedirs(CACHE_DIR, exist_ok=True)
        np.save(path, np.asarray(rows, dtype=np.float32))
    return Precomputed(model, dict(zip(ordered, rows, strict=True)))


def precompute(data: MemorySet, name: str) -> Precomputed:
    """Every memory and question text embedded once with embedder ``name``."""
    return embedded(name, [*(m.text for m in data.memories), *(q.text for q in data.questions)])


# --------------------------------------------------------------------------- measurement


def load(store: BaseStore, data: MemorySet, batch: int = 200) -> None:
    """Every memory under ``("memories", user)``, key = its key, ``{"text": ...}``, in batches."""
    ops = [PutOp(("memories", m.user), m.key, {"text": m.text}) for m in data.memories]
    for i in range(0, len(ops), batch):
        store.batch(ops[i : i + batch])


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Share of the relevant keys in the top ``k``, out of ``min(k, relevant)``."""
    return len(relevant.intersection(ranked[:k])) / min(k, len(relevant))


def reciprocal_rank(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1 / rank of the first relevant key within the top ``k``, else 0."""
    return next((1.0 / r for r, key in enumerate(ranked[:k], 1) if key in relevant), 0.0)


def evaluate(store: BaseStore, data: MemorySet) -> dict[str, Any]:
    """Recall@5, MRR@10 per question kind and scope, and ms per search per scope."""
    out: dict[str, Any] = {}
    scope: Scope
    for scope in SCOPES:
        per_kind: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in KINDS}
        times: list[float] = []
        for q in data.questions:
            prefix = ("memories", q.user) if scope == "user" else ("memories",)
            start = time.perf_counter()
            hits = store.search(prefix, query=q.text, limit=LIMIT)
            times.append(time.perf_counter() - start)
            ranked = [h.key for h in hits]
            relevant = data.relevant(q, scope)
            per_kind[q.kind][0].append(recall_at(ranked, relevant, 5))
            per_kind[q.kind][1].append(reciprocal_rank(ranked, relevant, LIMIT))
        for kind, (recalls, rrs) in per_kind.items():
            out[f"{kind}/{scope}/recall@5"] = statistics.fmean(recalls) if recalls else 0.0
            out[f"{kind}/{scope}/mrr@10"] = statistics.fmean(rrs) if rrs else 0.0
        out[f"{scope}/ms"] = statistics.fmean(times) * 1000
    return out


StoreFactory = Callable[..., AbstractContextManager[BaseStore | None]]


def measured(
    backend: str, name: str, mode: str, store: BaseStore, data: MemorySet, load_s: float
) -> dict[str, Any]:
    """The row of one store: every question asked, printed as it comes."""
    row = {"backend": backend, "embedder": name, "mode": mode, "load_s": round(load_s, 2)}
    row |= evaluate(store, data)
    print(
        f"  {backend:8} {name:9} {mode:8} "
        + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if isinstance(v, float)),
        flush=True,
    )
    return row


def run_backend(
    backend: str,
    factory: StoreFactory,
    data: MemorySet,
    embeds: dict[str, Precomputed],
    modes: Sequence[str],
    settle: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Each embedder x mode on ``backend``. Our modes: one fresh table or prefix, loaded once (by a
    hybrid store, which writes the words too), settled (``settle``: Postgres analyzes it), then
    searched by one store per mode at the vector search setting the loaded store calibrated
    (:func:`fixed_search`); the official store: loaded on its own. ``load_s`` of our modes is the
    one shared load."""
    rows = []
    ours = [m for m in modes if m != "official"]
    for name, embed in embeds.items():
        place = f"r{uuid.uuid4().hex[:8]}"
        if ours:
            with factory(embed, "hybrid", place) as loader:
                assert loader is not None  # our stores exist on every backend
                start = time.perf_counter()
                load(loader, data)
                loaded = time.perf_counter() - start
                settle(place)
                ann = fixed_search(loader)
            print(
                f"  {backend:8} {name:9} vector search of our modes: {ann or 'exact'}", flush=True
            )
            for mode in ours:
                with factory(embed, mode, place, ann) as store:
                    assert store is not None
                    rows.append(measured(backend, name, mode, store, data, loaded))
        if "official" in modes:
            with factory(embed, "official") as official:
                if official is None:  # no official store on this backend
                    continue
                start = time.perf_counter()
                load(official, data)
                loaded = time.perf_counter() - start
                rows.append(measured(backend, name, "official", official, data, loaded))
    return rows


def describe(users: int, questions: int, data: MemorySet) -> str:
    """One line describing the set."""
    kinds = {k: sum(q.kind == k for q in data.questions) for k in KINDS}
    return (
        f"{len(data.memories):,} memories of {users} users, {len(data.questions)} questions "
        f"({kinds['identifier']} identifier, {kinds['paraphrase']} paraphrase)"
    )


# --------------------------------------------------------------------------- report


def render(rows: list[dict[str, Any]]) -> str:
    """A markdown table: one row per backend, embedder and mode."""
    head = (
        "| backend | embedder | mode | id R@5 user / global | para R@5 user / global "
        "| id MRR@10 user / global | para MRR@10 user / global | ms/query user / global |"
    )
    lines = [head, "|" + "---|" * 3 + "---:|" * 5]
    for r in rows:

        def pair(metric: str, r: dict[str, Any] = r) -> str:
            return f"{r[metric.format('user')]:.3f} / {r[metric.format('global')]:.3f}"

        lines.append(
            f"| {r['backend']} | {r['embedder']} | {r['mode']} | "
            f"{pair('identifier/{}/recall@5')} | {pair('paraphrase/{}/recall@5')} | "
            f"{pair('identifier/{}/mrr@10')} | {pair('paraphrase/{}/mrr@10')} | "
            f"{r['user/ms']:.2f} / {r['global/ms']:.2f} |"
        )
    return "\n".join(lines)


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, per backend and embedder where hybrid and vector both ran: recall@5
    deltas in points per scope, and hybrid latency over vector latency per scope."""
    by = {(r["backend"], r["embedder"], r["mode"]): r for r in rows}
    lines = []
    for (backend, name, mode), hyb in by.items():
        vec = by.get((backend, name, "vector"))
        if not mode.startswith("hybrid") or vec is None:
            continue
        parts = []
        for scope in SCOPES:
            d_id = 100 * (hyb[f"identifier/{scope}/recall@5"] - vec[f"identifier/{scope}/recall@5"])
            d_pa = 100 * (hyb[f"paraphrase/{scope}/recall@5"] - vec[f"paraphrase/{scope}/recall@5"])
            slow = hyb[f"{scope}/ms"] / vec[f"{scope}/ms"]
            parts.append(
                f"{scope}: identifier {d_id:+.1f} pts, paraphrase {d_pa:+.1f} pts, "
                f"latency {slow:.2f}x"
            )
        lines.append(f"{backend} / {name}: {mode} - vector recall@5: " + "; ".join(parts))
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="10 users, 60 questions, WordLlama only (CI)"
    )
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--seed", type=int, default=18)
    p.add_argument("--dsn", help="PostgreSQL DSN (default: an embedded server)")
    p.add_argument("--url", help="Redis URL with the Query Engine (default: a local server)")
    p.add_argument("--plain-url", help="Redis URL for --backends redis-plain (default: local)")
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument(
        "--embedders",
        help="comma-separated, of hash,wordllama,glove,minilm (default: hash,wordllama; --quick: wordllama)",
    )
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma-separated, of {list(MODES)}, hybrid:<lexical weight> and hybrid:<fusion>",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    users, questions = (10, 60) if args.quick else (args.users, args.questions)
    t0 = time.perf_counter()
    data = build(users=users, questions=questions, seed=args.seed)
    print(describe(users, questions, data), flush=True)
    names = args.embedders or ("wordllama" if args.quick else "hash,wordllama")
    embeds = {name: precompute(data, name) for name in names.split(",")}
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        hybrid_option(mode)  # an unknown mode stops the run before any store is loaded
    rows: list[dict[str, Any]] = []
    for backend in args.backends.split(","):
        if backend not in BACKENDS:
            raise SystemExit(f"unknown backend {backend!r}; known: {list(BACKENDS)}")
        resolve, open_store, settle = BACKENDS[backend]
        server = resolve({"postgres": args.dsn, "redis": args.url}.get(backend, args.plain_url))
        factory, settle_place = partial(open_store, server), partial(settle, server)
        rows += run_backend(backend, factory, data, embeds, modes, settle_place)
    print()
    print(render(rows))
    for line in targets(rows):
        print(line)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"set": describe(users, questions, data), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
