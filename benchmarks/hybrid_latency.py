"""Hybrid against vector search latency on LongMemEval, side by side (#26's "hybrid mean latency
<= 2x the vector search's").

LongMemEval's 5,437 rounds are loaded once into one store (one table or prefix, ``ANALYZE``-d on
Postgres), a vector-only and a hybrid store are opened on it, and the 470 questions are searched
(``limit=10``) globally and in the question's user's namespace. The two stores take turns per
question in an order that rotates with the question, each search's best of ``--repeat`` runs is
kept, and the mean and the median of the best times are printed per scope with the ratio.
``bench_conversations.py`` times each mode's pass once, one mode after the other, so the machine's
load moves between them; here both are timed within the same second.

Rankings are not compared across runs: each run loads and analyzes a table of its own, and two
runs of the same code once gave other scores on most pages (2026-12-04, cause not found; two
loads on one server agreed). Compare two versions of the code on one loaded table instead.

Examples::

    python benchmarks/hybrid_latency.py                          # Postgres, all questions
    python benchmarks/hybrid_latency.py --questions 100 --repeat 3
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack

from langgraph.store.base import BaseStore

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_conversations import LIMIT, SCOPES, load_store, puts
from benchmarks.bench_retrieval import Precomputed
from benchmarks.longmemeval import Collection, DataUnavailable, Question, load
from benchmarks.retrieval_stores import BACKENDS
from benchmarks.wordllama_embeddings import WordLlamaEmbeddings


def search_ms(store: BaseStore, q: Question, scope: str) -> float:
    """The ms of one search of ``q`` in ``scope`` (globally, or in the question's user's
    namespace)."""
    prefix = q.namespace[:1] if scope == "global" else q.namespace
    start = time.perf_counter()
    store.search(prefix, query=q.text, limit=LIMIT)
    return (time.perf_counter() - start) * 1000


def timed(
    stores: dict[str, BaseStore], data: Collection, scope: str, repeat: int
) -> dict[str, list[float]]:
    """Each store's best ms per question, the stores taking turns in an order rotating with the
    question."""
    names = list(stores)
    best: dict[str, list[float]] = {name: [] for name in names}
    for n, q in enumerate(data.questions):
        order = names[n % len(names) :] + names[: n % len(names)]
        times = dict.fromkeys(names, math.inf)
        for _ in range(repeat):
            for name in order:
                times[name] = min(times[name], search_ms(stores[name], q, scope))
        for name in names:
            best[name].append(times[name])
    return best


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="postgres", choices=sorted(BACKENDS))
    p.add_argument("--questions", type=int, default=None, help="questions (default all 470)")
    p.add_argument("--repeat", type=int, default=5, help="runs per search, the best kept")
    p.add_argument("--server", help="DSN or URL (default: a local server)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        data = load()
    except DataUnavailable as exc:
        print(f"LongMemEval is not available, skipping: {exc}")
        return 0
    if args.questions:
        data = data.subset(args.questions)
    texts = sorted({i.text for i in data.items} | {q.text for q in data.questions})
    model = WordLlamaEmbeddings()
    embed = Precomputed(model, dict(zip(texts, model.embed_documents(texts), strict=True)))
    resolve, open_store, settle = BACKENDS[args.backend]
    server = resolve(args.server)
    place = f"lat{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:
        stores = {"vector": stack.enter_context(open_store(server, embed, "vector", place))}
        stores["hybrid"] = stack.enter_context(open_store(server, embed, "hybrid", place))
        load_store(stores["hybrid"], puts(data))
        settle(server, place)
        print(
            f"{args.backend}: {len(data.items)} items, {len(data.questions)} questions, "
            f"best of {args.repeat}, load average {os.getloadavg()[0]:.2f}"
        )
        for scope in SCOPES:
            timed(stores, data.subset(min(20, len(data.questions))), scope, 1)  # warm up
            best = timed(stores, data, scope, args.repeat)
            v, h = best["vector"], best["hybrid"]
            print(
                f"{scope:>9}: vector {statistics.fmean(v):.2f} ms ({statistics.median(v):.2f}), "
                f"hybrid {statistics.fmean(h):.2f} ms ({statistics.median(h):.2f}): "
                f"{statistics.fmean(h) / statistics.fmean(v):.2f}x mean, "
                f"{statistics.median(h) / statistics.median(v):.2f}x median"
            )
        print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
