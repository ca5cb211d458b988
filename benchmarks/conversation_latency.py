"""Search latency on the conversation sets, the modes side by side (#26's "hybrid at vector speed"):
vector-only, hybrid and the official store searched **in turns** per question.

``bench_conversations.py`` times each mode over all questions one after the other, so a burst of
load from another process lands on one mode; here every question is searched by the stores in a
random order, ``--runs`` times, and each search's best time is kept. Reported per backend and
scope: mean (median) ms per search, hybrid over vector and vector over official (the ratios #26
sets targets on). The stores are loaded as ``bench_conversations.py`` loads them (our vector-only
and hybrid stores on one table or prefix, the official one on its own), and the first
:data:`WARM` questions are searched once by every store before the timed pass (a store's
calibration is ``bench_conversations.py``'s ``first10`` question, not this one's).
``--modes`` picks the stores (``vector`` always; ``hybrid:<fusion>`` adds a hybrid store with that
fusion on the same table or prefix, ``retrieval_stores.hybrid_option``): each hybrid mode is
reported over vector. Each of our stores calibrates its own vector search (as in use), so two
stores may search at different breadths; ``--fixed-search`` gives them all the loading store's.
``--rtt MS`` reaches the servers through ``rtt_proxy.py``, each round trip ``MS`` longer (plus the
proxy's own ~0.1 ms): a server across a network, where a search's number of round trips shows.

Examples::

    python benchmarks/conversation_latency.py --data locomo --embedder glove --runs 3
    python benchmarks/conversation_latency.py --backends postgres --fixed-search \
        --modes vector,hybrid,hybrid:information
    python benchmarks/conversation_latency.py --backends postgres --fixed-search --rtt 0.5
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langgraph.store.base import BaseStore

from benchmarks.bench_conversations import (
    DATA,
    EMBEDDER_NAMES,
    LIMIT,
    SCOPES,
    conversation_data,
    load_store,
    precomputed,
    puts,
)
from benchmarks.bench_retrieval import Precomputed
from benchmarks.longmemeval import Collection, Question
from benchmarks.retrieval_stores import BACKENDS, fixed_search, hybrid_option
from benchmarks.rtt_proxy import delayed

#: Questions searched once by every store before the timed pass.
WARM = 50
MODES = ("vector", "hybrid", "official")


def prefix(q: Question, scope: str) -> tuple[str, ...]:
    """The namespace prefix a question is searched under in ``scope``."""
    return q.namespace[:1] if scope == "global" else q.namespace


def best_times(
    stores: dict[str, BaseStore], questions: Sequence[Question], scope: str, runs: int
) -> dict[str, list[float]]:
    """Each store's best ms per question over ``runs``, the stores taking turns in a random order
    each run (seeded). A fixed rotation let a store that always follows another running the same
    search on the same tables (hybrid after vector) find the caches warm: two copies of one
    vector store measured 1.05-1.07x apart that way (1.2-1.3x on a busy machine), 0.96-1.00x in
    a random order (docs/hybrid.md, "The page's items, read after the fusion")."""
    names = list(stores)
    best: dict[str, list[float]] = {name: [] for name in names}
    rng = random.Random(26)
    for q in questions:
        fastest = dict.fromkeys(names, float("inf"))
        for _ in range(runs):
            for name in rng.sample(names, len(names)):
                start = time.perf_counter()
                stores[name].search(prefix(q, scope), query=q.text, limit=LIMIT)
                fastest[name] = min(fastest[name], (time.perf_counter() - start) * 1000)
        for name in names:
            best[name].append(fastest[name])
    return best


def run_backend(
    backend: str,
    data: Collection,
    embed: Precomputed,
    runs: int,
    modes: Sequence[str] = MODES,
    fixed: bool = False,
    rtt: float | None = None,
) -> None:
    """Load ``data`` into the backend's stores of ``modes`` and print each scope's line; with
    ``fixed`` our stores all search with the vector search the loading store calibrated itself to
    (``retrieval_stores.fixed_search``), so a difference between them is not their calibrations';
    with ``rtt`` (ms) every store reaches the server through the delay proxy (``rtt_proxy``)."""
    resolve, open_store, settle = BACKENDS[backend]
    server = resolve(None)
    place = f"lat{uuid.uuid4().hex[:6]}"
    ops = puts(data)
    with ExitStack() as stack:
        reach = server if rtt is None else stack.enter_context(delayed(server, rtt))
        stores = {"hybrid": stack.enter_context(open_store(reach, embed, "hybrid", place))}
        load_store(stores["hybrid"], ops)
        settle(server, place)
        ann = fixed_search(stores["hybrid"]) if fixed else None
        if ann is not None:
            print(f"| {backend} | our stores' vector search: {ann or 'exact'} |", flush=True)
        for mode in modes:
            if mode == "official":
                official = stack.enter_context(open_store(reach, embed, mode))
                if official is None:  # no official store runs there (Redis plain mode)
                    continue
                stores[mode] = official
                load_store(official, ops)
            elif mode != "hybrid" or ann is not None:
                stores[mode] = stack.enter_context(open_store(reach, embed, mode, place, ann))
        modes = [name for name in modes if name in stores]
        stores = {name: stores[name] for name in modes}
        for scope in SCOPES:
            for q in data.questions[:WARM]:
                for store in stores.values():
                    store.search(prefix(q, scope), query=q.text, limit=LIMIT)
            best = best_times(stores, data.questions, scope, runs)
            mean = {name: statistics.fmean(t) for name, t in best.items()}
            cells = ", ".join(
                f"{name} {mean[name]:.2f} ({statistics.median(best[name]):.2f})" for name in modes
            )
            ratios = [f"{mean[m] / mean['vector']:.2f}x" for m in modes if m.startswith("hybrid")]
            if "official" in modes:
                ratios.append(f"{mean['vector'] / mean['official']:.2f}x")
            print(f"| {backend} | {scope} | {cells} | {' | '.join(ratios)} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="longmemeval", choices=sorted(DATA))
    p.add_argument("--embedder", default="wordllama", choices=sorted(EMBEDDER_NAMES))
    p.add_argument("--backends", default="postgres,redis", help="postgres,redis")
    p.add_argument("--questions", type=int, default=None, help="questions (default all)")
    p.add_argument("--runs", type=int, default=3, help="searches per store and question")
    p.add_argument(
        "--modes", default=",".join(MODES), help="vector and any of hybrid, hybrid:<x>, official"
    )
    p.add_argument(
        "--fixed-search",
        action="store_true",
        help="our stores all search with the loading store's calibrated vector search",
    )
    p.add_argument(
        "--rtt",
        type=float,
        default=None,
        help="milliseconds added to each round trip (a delay proxy before each server)",
    )
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if "vector" not in modes:
        raise SystemExit("--modes must include vector (the hybrid modes are reported over it)")
    for mode in modes:
        hybrid_option(mode)  # an unknown mode stops the run before anything is loaded
    data = conversation_data(args.data, args.questions)
    if data is None:
        return 0
    embed = precomputed(data, args.embedder)
    print(
        f"{args.data}: {len(data.items)} items, {len(data.questions)} questions, "
        f"{EMBEDDER_NAMES[args.embedder]}, best of {args.runs}, mean (median) ms per search"
        + ("" if args.rtt is None else f", round trips {args.rtt} ms longer (proxy)")
        + "\n"
    )
    ratios = [f"{m} / vector" for m in modes if m.startswith("hybrid")]
    ratios += ["vector / official"] if "official" in modes else []
    print(f"| backend | scope | {', '.join(modes)} | {' | '.join(ratios)} |")
    print("|---|---|---|" + "---:|" * len(ratios))
    for backend in filter(None, args.backends.split(",")):
        run_backend(backend, data, embed, args.runs, modes, args.fixed_search, args.rtt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
