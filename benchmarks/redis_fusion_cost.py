"""What the lexical side of a Query Engine hybrid search would cost if it gave every candidate its
cosine and IDF sum (``information_tied_cut_union``, docs/hybrid.md), side by side with today's.

A hybrid store is loaded with a conversation set (``bench_conversations.py``'s helpers), each
question is searched once by it and its lexical script call is kept; then, per question and in a
rotating order, the hybrid and vector-only stores' searches and replays (``EVALSHA``) of today's
script and of its variants (``redis_fusion_lua.py``) are timed: each op's best client time of
``--runs`` (the variant's reply decoded and its cosines and IDF sums computed, as a store would)
and its server time (``SLOWLOG``, every command logged). A variant's hybrid search is estimated as
the hybrid store's measured time plus the variant's extra client time over today's script replayed.
``e_idf_all`` is ``e_idf`` reading every candidate's ``m`` and ``c`` too (any candidate can reach
the fused page). For ``--check`` questions the variants' cosines and IDF sums are compared with
numpy's over the set's vectors and words.

Example::

    python benchmarks/redis_fusion_cost.py --runs 3
"""

from __future__ import annotations

import argparse
import base64
import math
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import redis

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
from benchmarks.conversation_latency import prefix
from benchmarks.longmemeval import Collection, Question
from benchmarks.redis_fusion_lua import variant_sources
from benchmarks.retrieval_stores import BACKENDS
from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.hybrid import words
from langmem_adapters.core.values import load_json
from langmem_adapters.redis.layout import Keys, text
from langmem_adapters.redis.lexical import Lexical, query_terms
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.scripts import SCRIPTS

#: The replayed scripts: today's and the variants (``redis_fusion_lua.py``).
VARIANTS = (
    "today", "ew", "e_idf", "e_idf_all", "idf", "knn_idf", "idf_inkeys", "knn_inkeys",
    "knn_explain",
)  # fmt: skip
#: The variants that give no cosines.
NO_COSINE = ("idf", "idf_inkeys")
ItemKey = tuple[str, str]


@dataclass(frozen=True)
class Replay:
    """One question's lexical call as the hybrid store sent it, and what the variants add."""

    args: tuple[Any, ...]
    df: dict[str, int]  # every query word some item holds: how many do
    qvec: np.ndarray[Any, Any]  # the query's vector, float32
    vindex: str
    field: str


@dataclass(frozen=True)
class Candidate:
    """A lexical candidate as a variant returns it."""

    key: ItemKey
    cosine: float | None
    idf: float


@contextmanager
def captured() -> Iterator[list[Any]]:
    """The lexical script calls the hybrid stores send meanwhile (``Lexical.calls`` observed)."""
    seen: list[Any] = []
    original = Lexical.calls

    def calls(self: Lexical) -> Any:
        out = original(self)
        seen.extend(out)
        return out

    Lexical.calls = calls  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Lexical.calls = original  # type: ignore[method-assign]


class Replayer:
    """Today's lexical script and its variants, sent and decoded as a store would."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.keys = client, keys
        sources = {"today": SCRIPTS["lexical"], **variant_sources()}
        self.sha = {name: client.script_load(src) for name, src in sources.items()}
        self.sha["e_idf_all"] = self.sha["e_idf"]

    def send(self, name: str, rp: Replay) -> Any:
        """The variant's reply to the question's call."""
        args = list(rp.args)
        if name == "e_idf_all":
            args[6] = args[2]  # read = window: every candidate's m and c
        pairs = [x for w, n in rp.df.items() for x in (w, n)]
        if name in ("e_idf", "e_idf_all", *NO_COSINE):
            args = [len(pairs), *pairs, *args]
        elif name in ("knn_idf", "knn_inkeys", "knn_explain"):
            extra = [rp.vindex, rp.field, rp.qvec.tobytes(), *pairs]
            args = [len(extra), *extra, *args]
        elif name == "ew":
            args = [0, *args]
        return self.client.evalsha(self.sha[name], 0, *args)

    def replay(self, name: str, rp: Replay) -> list[Candidate]:
        """The question's call sent with the variant ``name``, its reply decoded."""
        return self.candidates(name, rp, self.send(name, rp))

    def candidates(self, name: str, rp: Replay, reply: Any) -> list[Candidate]:
        """The reply decoded: each candidate's cosine (computed here from ``e`` for ``ew`` and
        ``e_idf``) and IDF sum (here from ``w`` for ``ew``); today's script: none of either."""
        _, rows, _, size = load_json(text(reply))
        keys = [self._key(row) for row in rows]
        if name == "today":
            return [Candidate(k, None, 0.0) for k in keys]
        if name in ("knn_idf", "knn_inkeys", "knn_explain", *NO_COSINE):
            return [Candidate(k, row[-2], float(row[-1])) for k, row in zip(keys, rows)]
        cos = cosines([row[-2] for row in rows], rp.qvec)
        if name == "ew":
            idf = [idf_sum(set(row[-1].split()), rp.df, size) for row in rows]
        else:
            idf = [float(row[-1]) for row in rows]
        return [Candidate(k, c, i) for k, c, i in zip(keys, cos, idf)]

    def _key(self, row: list[Any]) -> ItemKey:
        if isinstance(row[0], str) and row[0].startswith(self.keys.prefix + ":i:"):
            return self.keys.item_id(row[0])
        r = Record.parse(row[0], row[1])
        return (nsp.join(r.namespace), r.key)


def cosines(encoded: Sequence[str], qvec: np.ndarray[Any, Any]) -> list[float | None]:
    """Each item's best cosine to ``qvec`` over its vectors (``e``: base64 float32, "": none)."""
    parts = [np.frombuffer(base64.b64decode(e), np.float32) for e in encoded]
    sizes = [p.size // qvec.size for p in parts]
    if not any(sizes):
        return [None] * len(parts)
    m = np.concatenate(parts).reshape(-1, qvec.size)
    sims = m @ qvec / (np.linalg.norm(m, axis=1) * np.linalg.norm(qvec))
    starts = np.cumsum([0, *sizes[:-1]])
    best = np.maximum.reduceat(sims, starts[np.asarray(sizes) > 0])
    it = iter(best.tolist())
    return [next(it) if n else None for n in sizes]


def idf_sum(held: set[str] | frozenset[str], df: dict[str, int], size: int) -> float:
    """Lucene's IDF summed over the query words (``df``: how many of ``size`` items hold each)
    that ``held`` holds."""
    return sum(math.log(1 + (size - n + 0.5) / (n + 0.5)) for w, n in df.items() if w in held)


def word_counts(client: redis.Redis, index: str, terms: Sequence[str]) -> dict[str, int]:
    """How many items of the index hold each query word (those none holds left out)."""
    out = {}
    for w in terms:
        reply = client.execute_command(
            "FT.SEARCH", index, "@w:($t)", "VERBATIM", "NOCONTENT", "LIMIT", 0, 0,
            "PARAMS", 2, "t", w, "DIALECT", 2,
        )  # fmt: skip
        if int(reply[0]) > 0:
            out[w] = int(reply[0])
    return out


def server_us(client: redis.Redis) -> float:
    """Server µs of the commands clients sent since the last call (SLOWLOG, then reset): the
    commands a script runs are logged too (Redis 8), with no client address, and left out."""
    got = client.slowlog_get(100_000)
    client.slowlog_reset()
    return float(sum(e["duration"] for e in got if e["client_address"]))


@dataclass
class Setup:
    """The loaded stores and what the replays need."""

    data: Collection
    embed: Precomputed
    client: redis.Redis
    stores: dict[str, BaseStore]
    replayer: Replayer
    vindex: str
    field: str


def replays(s: Setup, scope: str) -> dict[int, Replay]:
    """Each question's lexical call in ``scope`` (by question number; none: the query has no rare
    word, the lexical side sends nothing), captured from one hybrid search."""
    out = {}
    index = s.replayer.keys.index(None)
    for n, q in enumerate(s.data.questions):
        with captured() as seen:
            s.stores["hybrid"].search(prefix(q, scope), query=q.text, limit=LIMIT)
        if seen:
            qvec = np.asarray(s.embed.embed_query(q.text), np.float32)
            df = word_counts(s.client, index, query_terms(q.text))
            out[n] = Replay(tuple(seen[-1].args), df, qvec, s.vindex, s.field)
    return out


def ops(s: Setup, q: Question, scope: str, rp: Replay | None) -> dict[str, Callable[[], Any]]:
    """What is timed for one question: both stores' searches and each script's replay."""
    found: dict[str, Callable[[], Any]] = {
        mode: partial(s.stores[mode].search, prefix(q, scope), query=q.text, limit=LIMIT)
        for mode in ("vector", "hybrid")
    }
    if rp is not None:
        found.update((name, partial(s.replayer.replay, name, rp)) for name in VARIANTS)
    return found


def timed(
    s: Setup, scope: str, runs: int, calls: dict[int, Replay], server: bool
) -> dict[str, list[float]]:
    """Per op, its best client ms per question or, with ``server``, its best server µs (every
    command logged, which slows the server: the client times are taken in a pass without), the
    ops taking turns in a rotating order, ``runs`` times."""
    best: dict[str, list[float]] = {}
    s.client.config_set("slowlog-log-slower-than", 0 if server else -1)
    server_us(s.client)
    for n, q in enumerate(s.data.questions):
        todo = ops(s, q, scope, calls.get(n))
        names = list(todo)
        names = names[n % len(names) :] + names[: n % len(names)]
        fastest = dict.fromkeys(names, float("inf"))
        for _ in range(runs):
            for name in names:
                start = time.perf_counter()
                todo[name]()
                took = (time.perf_counter() - start) * 1000
                fastest[name] = min(fastest[name], server_us(s.client) if server else took)
        for name in names:
            best.setdefault(name, []).append(fastest[name])
    s.client.config_set("slowlog-log-slower-than", -1)
    return best


def report(
    scope: str, ms: dict[str, list[float]], us: dict[str, list[float]], questions: int
) -> None:
    """One table per scope: per script its server µs and client ms per call, and the hybrid search
    estimated with it (the store's measured hybrid search plus the extra over today's replay)."""
    hybrid, vector = statistics.fmean(ms["hybrid"]), statistics.fmean(ms["vector"])
    print(
        f"\n{scope}: vector {vector:.3f} ms (server {statistics.fmean(us['vector']):.0f} us), "
        f"hybrid {hybrid:.3f} ms (server {statistics.fmean(us['hybrid']):.0f} us), "
        f"{hybrid / vector:.2f}x; {len(ms.get('today', []))} of {questions} questions send a "
        "lexical call\n"
    )
    print("| script | server us mean (median) | client ms mean | est. hybrid ms | / vector |")
    print("|---|---:|---:|---:|---:|")
    for name in VARIANTS:
        if name not in ms:
            continue
        extra = sum(a - b for a, b in zip(ms[name], ms["today"])) / questions
        cells = f"{statistics.fmean(us[name]):.0f} ({statistics.median(us[name]):.0f})"
        est = hybrid + extra
        print(
            f"| {name} | {cells} | {statistics.fmean(ms[name]):.3f} | {est:.3f} | "
            f"{est / vector:.2f}x |"
        )


def check(s: Setup, calls: dict[int, Replay], count: int) -> None:
    """For ``count`` questions, each variant's cosines and IDF sums against numpy's over the
    set's vectors and words (the largest differences)."""
    items = {(nsp.join(i.namespace), i.key): i.text for i in s.data.items}
    held = {k: frozenset(words(t)) for k, t in items.items()}
    df = Counter(w for ws in held.values() for w in ws)
    worst: dict[str, list[float]] = {}
    for n in list(calls)[:count]:
        rp, q = calls[n], s.data.questions[n]
        qv = np.asarray(s.embed.embed_query(q.text), np.float64)
        terms = {w: df[w] for w in query_terms(q.text) if df[w]}
        for name in VARIANTS[1:]:
            got = s.replayer.replay(name, rp)
            for c in got:
                v = np.asarray(s.embed.embed_query(items[c.key]), np.float64)
                cos = float(v @ qv / np.linalg.norm(v) / np.linalg.norm(qv))
                idf = idf_sum(held[c.key], terms, len(items))
                pair = worst.setdefault(name, [0.0, 0.0, 0.0])
                if name not in NO_COSINE:
                    pair[0] = max(pair[0], abs((c.cosine if c.cosine is not None else 9.0) - cos))
                pair[1] = max(pair[1], abs(c.idf - idf))
                pair[2] += 1
    for name, (dc, di, m) in worst.items():
        print(
            f"check {name}: {m:.0f} candidates, max |cos - numpy| {dc:.2e}, |idf - numpy| {di:.2e}"
        )


def run(data: Collection, embed: Precomputed, runs: int, checks: int) -> None:
    """Load the stores, then per scope capture, check and time."""
    resolve, open_store, settle = BACKENDS["redis"]
    url = resolve(None)
    place = f"fc{uuid.uuid4().hex[:6]}"
    client = redis.Redis.from_url(url, decode_responses=False, protocol=2)
    with ExitStack() as stack:
        hybrid = stack.enter_context(open_store(url, embed, "hybrid", place))
        load_store(hybrid, puts(data))
        settle(url, place)
        vector = stack.enter_context(open_store(url, embed, "vector", place))
        names = [text(n) for n in client.execute_command("FT._LIST")]
        vindex = next(n for n in names if n.startswith(f"{place}:vec:"))
        info = str(client.execute_command("FT.INFO", vindex))
        field = "f" if "b'f'" in info else "e"
        keys = Keys(place)
        s = Setup(data, embed, client, {"hybrid": hybrid, "vector": vector},
                  Replayer(client, keys), vindex, field)  # fmt: skip
        old = client.config_get("slowlog-*")
        client.config_set("slowlog-max-len", 100_000)
        try:
            for scope in SCOPES:
                calls = replays(s, scope)
                check(s, calls, checks)
                ms = timed(s, scope, runs, calls, server=False)
                us = timed(s, scope, runs, calls, server=True)
                report(scope, ms, us, len(data.questions))
        finally:
            for k, v in old.items():
                client.config_set(str(k), str(v))
            client.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="longmemeval", choices=sorted(DATA))
    p.add_argument("--embedder", default="wordllama", choices=sorted(EMBEDDER_NAMES))
    p.add_argument("--questions", type=int, default=None, help="questions (default all)")
    p.add_argument("--runs", type=int, default=3, help="times per op and question (best kept)")
    p.add_argument("--check", type=int, default=20, help="questions checked against numpy")
    p.add_argument("--quick", action="store_true", help="20 questions, one run (CI)")
    args = p.parse_args(argv)
    if args.quick:
        args.questions, args.runs = 20, 1
    data = conversation_data(args.data, args.questions)
    if data is None:
        return 0
    embed = precomputed(data, args.embedder)
    print(
        f"{args.data}: {len(data.items)} items, {len(data.questions)} questions, {args.embedder}, "
        f"best of {args.runs}, load average {os.getloadavg()[0]:.2f}"
    )
    run(data, embed, args.runs, args.check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
