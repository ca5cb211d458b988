"""Query Engine search: one ``FT.SEARCH`` (through the search script) per search op, for namespace,
filters and order or KNN, widened until its page is exact; and the KNN settings for the index size."""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.calibration import Cold
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.core.values import load_json
from langmem_adapters.core.vectors import Distance, IndexSpec, explicit_breadth, search_breadth
from langmem_adapters.redis.layout import Keys, text, under, vector_dtype
from langmem_adapters.redis.records import Record
from langmem_adapters.redis.replies import count_command, total_results
from langmem_adapters.redis.schema import EXACT_TWIN, has_attribute, info_field, num_docs
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.stats import RedisStats
from langmem_adapters.redis.tokens import path_token, pushdown

__all__ = [
    "COLD",
    "EF_RUNTIME",
    "EXACT_BELOW",
    "MAX_WINDOW",
    "NO_KNN",
    "SORT_FROM",
    "SORT_UP_TO",
    "Knn",
    "Page",
    "Searcher",
    "knn_settings",
    "query_vector",
    "read_items_info",
    "shortcuts",
    "standard_distance",
    "unscored_tail",
]

# HNSW search breadth by index size, for recall@10 >= 0.95 against exact search with the default
# build (M=16, EF_CONSTRUCTION=64) on hard, weakly clustered data, with margin for the spread between
# builds and query sets: measured 0.985-0.988 at 10k items with 150 (100 gave 0.962), 0.967-0.978 at
# 50k with 300 (250 gave 0.957), and 0.976-0.985 at 100k with 600 (400 gave 0.951-0.971).
EF_RUNTIME = ((20_000, 150), (50_000, 300), (50_001, 600))

# Up to this many documents under a prefix (or in the whole index), a KNN search scans them exactly
# (the exact twin, else ``HYBRID_POLICY ADHOC_BF``): HNSW misses the nearest among many equal
# vectors (a small prefix of duplicates is common in agent memory), and such a scan costs less than
# the graph walk. ``ann_index_config={"exact_below": n}`` changes it (0: always the index).
EXACT_BELOW = 1000

# Before a measurement fits the index (a new store instance with nothing kept, or a grown index),
# KNN scans exactly up to this many documents, else walks HNSW at this breadth. ``bench_cold_start
# --line`` (standard-normal 256-d, global, docs/benchmarks.md): ADHOC_BF served 0.6-1.2x the
# searches of HNSW at 1000 up to 10k documents, the exact twin's scan 2.0x at 10k, 1.9x at 20k.
COLD = Cold(exact_up_to=10_000, breadth=1000)

# The brute-force policy, and a filter every document passes (no token is this word): a KNN query
# over the whole index takes a policy only as a hybrid query, with a filter.
ADHOC = " HYBRID_POLICY ADHOC_BF"
EVERY = "-@p:{none}"

# The most rows one FT.SEARCH returns (the server's MAXSEARCHRESULTS default): a search serves at most
# this many rows, so a larger ``offset + limit`` reads that many (docs/semantics.md).
MAX_WINDOW = 1_000_000

# From this many documents in the items index, a newest-first search tries the search script's
# shortcuts first (``lua/search.lua``): the query within the newest updated_at range that held its
# last window, or else RediSearch's sort optimizer, each kept only when provably exact. The plain
# query gathers and sorts every match, so its cost grows with the matches; the shortcuts read the
# newest ranges of the indexed timestamp ``o`` and cost about the same at any size, but on a small
# index the optimizer's guess is coarse and often gives a short window, costing the plain query too.
# Measured side by side (bench_redis's user prefix, ``kind == "fact"``, limit 10): at 100k items the
# shortcuts make it 1.68x faster, a global filtered search 3.6x; at 10k, forced on, 0.70x
# (docs/architecture.md; at 1M 6.2 against 0.31 ms, docs/benchmarks.md).
SORT_FROM = 50_000
# The widest window the shortcuts are tried for: the optimizer allocates its heap at the window's
# size up front, and a page this deep costs the plain sort little more than the rows it returns.
SORT_UP_TO = 10_000

# The Query Engine's distance as pgvector's (what ``IndexSpec.score`` takes): it reports 1 - dot for
# inner product and the squared Euclidean distance for l2.
_STANDARD: dict[Distance, Callable[[float], float]] = {
    "cosine": lambda d: d,
    "inner_product": lambda d: d - 1.0,
    "l2": lambda d: max(d, 0.0) ** 0.5,
}

_SORT_KEY = attrgetter("sort_key")  # a record's place in search order


def query_vector(spec: IndexSpec, qvec: list[float]) -> bytes:
    """A query vector as the server's KNN takes it (the ``$B`` parameter)."""
    return np.asarray(qvec, vector_dtype(spec)[1]).tobytes()


def standard_distance(spec: IndexSpec, d: float) -> float:
    """The server's distance ``d`` as pgvector's (what ``IndexSpec.score`` takes)."""
    return _STANDARD[spec.distance](d)


class Page(NamedTuple):
    """A search's page: its op's place in the batch, the op it ran and the records found."""

    at: int
    op: SearchOp
    records: list[Record]


class Knn(NamedTuple):
    """How a batch's KNN searches run (see :func:`knn_settings`)."""

    ef: int = 0  # HNSW search breadth (0: none, a search without a query vector)
    broad: frozenset[str] = frozenset()  # prefix tokens holding half of the index or more
    exact: frozenset[str] = frozenset()  # prefix tokens ("": the index) to scan exactly
    twin: bool = False  # exact scans read the index's exact twin (redis/schema.py)
    whole: frozenset[str] = frozenset()  # prefix tokens holding the whole index when counted


NO_KNN = Knn()  # the settings of a search without a query vector


@dataclass(frozen=True, slots=True)
class Searcher:
    """Query Engine search of one op: a server query for namespace, filters and order/KNN, built
    complete by :meth:`build` and never changed after.

    Expiry is not part of the query: a range over every document would make the server filter the
    whole index (and turn KNN into a slow hybrid search). Keys expire natively and leave the index
    by themselves; until then the search script reads them as missing. Conditions the index cannot
    answer exactly (ranges, array paths) are checked on the returned rows.
    """

    keys: Keys
    spec: IndexSpec | None
    op: SearchOp
    conds: tuple[Condition, ...]
    qvec: list[float] | None
    ef: int
    #: The query's clauses: the namespace prefix's token, then the conditions the index answers.
    parts: tuple[str, ...]
    #: Whether the server answers every condition (none is checked on the returned rows).
    exact: bool
    #: The KNN query's ``HYBRID_POLICY`` clause, or "".
    policy: str
    #: When set, newest-first windows try the search script's shortcuts first, and this maps a
    #: query to the last updated_at of its last window so read (see :func:`shortcuts`).
    edges: dict[str, int] | None = None
    field: str = "e"  #: The vector field searched: ``e``, or the exact twin (``EXACT_TWIN``).
    #: The prefix and pushed-down clauses, whichever way the KNN scans (the lexical side's head,
    #: so its scores do not depend on the vector side's path).
    where: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        keys: Keys,
        spec: IndexSpec | None,
        op: SearchOp,
        conds: tuple[Condition, ...],
        qvec: list[float] | None,
        knn: Knn = NO_KNN,
        edges: dict[str, int] | None = None,
    ) -> Searcher:
        """The search of ``op``; ``knn``: the batch's KNN settings, ``edges``: see :attr:`edges`."""
        prefix = tuple(op.namespace_prefix)
        token = path_token("n", prefix) if prefix else ""
        pushed = [pushdown(c) for c in conds]
        parts = [f"@p:{{{token}}}"] if prefix else []
        parts += [c for c in pushed if c]
        where = tuple(parts)
        policy, field, checked = "", "e", False
        if qvec is not None and token in knn.exact and knn.twin:
            # Exactly, by the FLAT twin's scan; a prefix holding the whole index is checked on the
            # rows instead, as the scan is cheapest unfiltered (0.6 against 1.0 ms at 10k vectors).
            field, checked = EXACT_TWIN, bool(prefix) and token in knn.whole
            parts = parts[1:] if checked else parts
            policy = ADHOC if parts else ""
        elif qvec is not None and token in knn.exact:
            # Search exactly, by a brute-force scan of the prefix's documents: HNSW misses
            # neighbours among many equal vectors, and a small prefix is scanned as fast.
            parts, policy = parts or [EVERY], ADHOC  # a hybrid query, which alone takes a policy
        elif prefix and not conds and token in knn.broad:
            # A namespace filter that keeps most of the index (and nothing else to filter): walk the
            # HNSW graph and filter its batches, which the server's own choice (a brute-force scan
            # over the filtered documents) does far slower there (1.67x at 10k items, all under
            # the prefix: docs/architecture.md).
            policy = " HYBRID_POLICY BATCHES"
        exact = all(c is not None for c in pushed) and not checked
        knn_parts = tuple(parts)
        return cls(
            keys, spec, op, conds, qvec, knn.ef, knn_parts, exact, policy, edges, field, where
        )

    @property
    def need(self) -> int:
        """The rows the page reads up to: ``offset + limit``."""
        return self.op.offset + self.op.limit

    @property
    def first_window(self) -> int:
        """The rows the first window asks for. Rows past the page show whether a tie crosses its
        edge; nearest-neighbour distances tie more often, and a longer KNN window costs the server
        next to nothing."""
        return max(2 * self.need, 20) if self.qvec is not None else max(self.need + 1, 10)

    def _query(self) -> str:
        return f"({' '.join(self.parts)})" if self.parts else "*"  # "(*)": KNN as a slow hybrid

    def _edge_key(self, window: int) -> str:
        """Where the edge of this query's last newest-first window of ``window`` rows is kept."""
        return f"{min(window, MAX_WINDOW)} {self._query()}"

    def call(self, window: int) -> Call:
        """The window's query: newest first, or the ``window`` nearest neighbours."""
        window = min(window, MAX_WINDOW)  # the server's bound; a wider window is then never full
        if self.qvec is None or self.spec is None:
            return self._search(self._query(), "u", "DESC", window)
        ef = f"{self.policy} EF_RUNTIME {max(self.ef, window)}" if self.spec.kind != "exact" else ""
        scan = self.policy == ADHOC or self.field == EXACT_TWIN  # a scan takes no breadth
        knn = f"{self._query()}=>[KNN {window} @{self.field} $B{self.policy if scan else ef} AS d]"
        return self._search(knn, "d", "ASC", window)

    def _search(self, query: str, sort: str, order: str, window: int) -> Call:
        ret: list[Any] = ["NOCONTENT"]
        params: list[Any] = []
        if self.qvec is not None and self.spec is not None:
            ret, params = ["RETURN", 1, "d"], ["PARAMS", 2, "B", query_vector(self.spec, self.qvec)]
        # A KNN page whose conditions the server answered needs only its own rows (and ties): 1.12-
        # 1.16x wall on a one-namespace KNN search at 10k items, 1.07-1.09x global (architecture.md).
        load = self.need if self.exact and params else 0
        shortcut, guess = 0, ""
        if not params and self.edges is not None and window <= SORT_UP_TO:
            shortcut, guess = window, str(self.edges.get(self._edge_key(window), ""))
        # The search script's arguments (lua/search.lua), then the FT.SEARCH it sends.
        head = (load, shortcut, guess, self.keys.index(self.spec if params else None), query)
        tail = ("SORTBY", sort, order, "LIMIT", 0, window, *ret, *params, "DIALECT", 2)
        return Call((*head, *tail), script="search")

    def records(self, reply: Any, window: int) -> tuple[int, float | None, list[Record]]:
        """How many rows the window held, the last one's distance, and the rows read back (and
        for a newest-first window of the shortcuts, its edge kept for the next such window)."""
        hits, last, rows = load_json(reply)
        parse = Record.parse
        if self.qvec is None or self.spec is None:  # newest first: the rows carry no distance
            if self.edges is not None:  # a full window gives its edge; a short one none
                at = self._edge_key(window)
                if last is None:
                    self.edges.pop(at, None)
                else:
                    if len(self.edges) >= 4096:
                        self.edges.clear()
                    self.edges[at] = last
            return hits, None, [parse(meta, created) for meta, created, _ in rows]
        out = []
        for meta, created, d in rows:
            r = parse(meta, created)
            if d is not None:
                d = r.raw_distance = float(d)
                r.distance = standard_distance(self.spec, d)
            out.append(r)
        return hits, None if last is None else float(last), out

    @staticmethod
    def _primary(r: Record) -> float:
        return r.raw_distance if r.raw_distance is not None else -r.updated

    def _ok(self, r: Record) -> bool:
        return under(r.namespace, self.op.namespace_prefix) and matches(r.value, self.conds)

    def run(self, first_reply: Any, window: int) -> Generator[Round, list[Any], list[Record]]:
        """Every row that passed, in page order (its page: :meth:`page`); the window widened until
        ``offset + limit`` rows pass the client-side checks or none are left.

        It also widens while the page's last row ties (same updated_at: one batch; same distance:
        same text) with the window's last row, so the (namespace, key) tie-break is exact.
        """
        hits, last, rows = self.records(first_reply, window)
        while True:
            ok = rows if self.exact else [r for r in rows if self._ok(r)]
            edge = last if last is not None else self._primary(rows[-1]) if rows else None
            if hits < window or (len(ok) >= self.need and self._primary(ok[self.need - 1]) != edge):
                break
            window *= 4
            (reply,) = yield Round([self.call(window)])
            hits, last, rows = self.records(reply, window)
        ok.sort(key=_SORT_KEY)  # the server's order, with ties broken by namespace and key
        return ok

    def page(self, matched: list[Record]) -> list[Record]:
        """The op's page of the rows :meth:`run` found."""
        return matched[self.op.offset : self.need]


def unscored_tail(
    s: Searcher, scored: Collection[tuple[str, str]], page: list[Record], op: SearchOp
) -> Generator[Round, list[Any], list[Record]]:
    """The rest of a KNN page whose scored items ran out (``s.run`` found fewer than ``limit``, so
    ``scored`` holds every scored match, as (namespace text, key)): the matching items without
    vectors, newest first, from the items' index. Reading ``offset + limit`` of the newest matches
    is enough, since at most ``len(scored)`` of them are scored; one more round, only for such
    pages. ``op``: the search (a hybrid search's vector side ``s`` ran a wider one)."""
    scored = set(scored)
    skip = max(0, op.offset - len(scored))
    room = op.limit - len(page)
    wanted = op._replace(query=None, offset=0, limit=skip + room + len(scored))
    newest = Searcher.build(s.keys, None, wanted, s.conds, None, edges=s.edges)
    window = newest.first_window
    (reply,) = yield Round([newest.call(window)])
    rows = newest.page((yield from newest.run(reply, window)))
    return [r for r in rows if (nsp.join(r.namespace), r.key) not in scored][skip : skip + room]


def shortcuts(keys: Keys, stats: RedisStats | None) -> tuple[list[Call], dict[str, int] | None]:
    """The edges of the last windows (``stats.sort_edges``, for :attr:`Searcher.edges`) when this
    batch's newest-first searches try the search script's shortcuts: when the items index held at
    least :data:`SORT_FROM` documents, all indexed, when last read (``stats.items``); and the
    ``FT.INFO`` to send with the batch's searches when that reading is over a minute old (read back
    by :func:`read_items_info`: the batch itself goes by the reading before, costing no round).
    Without ``stats`` nothing is kept between batches: neither."""
    if stats is None:
        return [], None
    calls = [Call(("FT.INFO", keys.index(None)))] if stats.items.stale() else []
    size = stats.items.count or 0
    return calls, stats.sort_edges if size and size >= SORT_FROM else None


def read_items_info(stats: RedisStats, info: Any) -> None:
    """Keep the items index's size from an ``FT.INFO`` reply, as 0 unless the index is fully built
    and has the indexed timestamp ``o``: while an index scans its documents (after ``FT.ALTER``
    added ``o`` to an index made before it), ``o`` is missing from the documents not yet scanned,
    which the optimizer and its check would both miss."""
    built = float(text(info_field(info, "percent_indexed") or 0)) >= 1
    built = built and not int(float(text(info_field(info, "indexing") or 0)))
    stats.items.update(num_docs(info) if has_attribute(info, "o") and built else 0)


def knn_settings(
    keys: Keys,
    spec: IndexSpec,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    stats: RedisStats,
    queries: Sequence[list[float]] = (),
) -> Generator[Round, list[Any], Knn]:
    """HNSW search breadth (explicit ``ef_search``/``ef_runtime``, else the calibrated one, else by
    the index's size); the namespace prefixes (tokens) of this batch's KNN searches that hold at
    least half of the index, or all of it; whether exact scans read the index's exact twin; and
    those to scan exactly (``""``: the whole index): holding at most ``exact_below`` documents (or
    as many as calibration found a scan cheaper for), or all when calibration chose exact search
    (sizes re-read at most once a minute). ``queries`` (the batch's query vectors) go to the
    calibrator."""
    tokens = {
        path_token("n", tuple(op.namespace_prefix))
        for _, op, _ in searches
        if op.query and op.namespace_prefix
    }
    stale = sorted(t for t in tokens if stats.prefix(t).stale())
    calls = [Call(("FT.INFO", keys.index(spec)))] if stats.index.stale() else []
    calls += [Call(count_command(keys.index(spec), f"@p:{{{t}}}")) for t in stale]
    if calls:
        replies = yield Round(calls)
        if len(replies) > len(stale):
            stats.index.update(num_docs(replies[0]))
            stats.twin = has_attribute(replies[0], EXACT_TWIN)
        for t, reply in zip(stale, replies[len(replies) - len(stale) :]):
            stats.prefix(t).update(total_results(reply))
    total = stats.index.count or 0
    calibrator = stats.calibration
    explicit = explicit_breadth(spec)
    ef = explicit
    if not ef and calibrator is not None:
        calibrator.observe(queries, total)
        ef = calibrator.breadth(total, search_breadth(total, EF_RUNTIME))
    ef = ef or search_breadth(total, EF_RUNTIME)
    below = int(spec.ann.get("exact_below", EXACT_BELOW))
    if calibrator is not None:
        below = calibrator.exact_up_to(below, "exact_below" in spec.ann)
    everything = not explicit and calibrator is not None and calibrator.exact_at(total)
    sizes = {t: stats.prefix(t).count or 0 for t in tokens} | {"": total}
    exact = frozenset(t for t, n in sizes.items() if n <= below or everything)
    broad = frozenset(t for t in tokens if 2 * sizes[t] >= max(total, 1))
    whole = frozenset(t for t in tokens if sizes[t] >= total)
    return Knn(ef, broad, exact, stats.twin, whole)
