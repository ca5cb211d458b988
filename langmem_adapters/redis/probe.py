"""The Redis side of calibration (:mod:`langmem_adapters.core.calibration`): the commands that count
and sample the vector index and search it exactly (a brute-force scan) and through HNSW at a given
``EF_RUNTIME``.

Redis runs one command at a time, and a client waits 5 s for a reply by default (redis-py 8's
``socket_timeout``), so the probe never sends a round that holds the server long: each query is a
round of its own, and the sample draws random keys (``RANDOMKEY``, constant time) instead of paging
the index to random offsets (a wildcard ``FT.SEARCH`` walks every document: 50-310 ms each at
300,000 documents). At that size the pipelined probe held the server for over 5 s: the check failed
with a timeout and searches of other clients waited or failed with it (docs/benchmarks.md,
"Calibration at 300,000 vectors on Redis")."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.recall import Hit
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import SearchTimeoutError, ServerRefusedError
from langmem_adapters.redis.layout import Keys, text, vector_dtype
from langmem_adapters.redis.replies import count_command, timeout_warning, total_results
from langmem_adapters.redis.schema import EXACT_TWIN, has_attribute
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.search import ADHOC, EVERY

__all__ = ["DRAWS", "DRAW_ROUNDS", "RedisProbe"]

#: ``RANDOMKEY`` draws per document still wanted, in each of at most ``DRAW_ROUNDS`` rounds.
DRAWS = 4
DRAW_ROUNDS = 4


def _hits(reply: Any) -> list[Hit]:
    """The ``(id, distance)`` rows of a KNN reply. A query that ran out of the server's time
    (``TIMEOUT``, 500 ms by default, with ``ON_TIMEOUT return``) answers a partial list, its rows
    without the distance: raised, as a measurement on it would be wrong (the check runs again)."""
    rows = _rows(reply)
    if (why := timeout_warning(reply)) is not None:
        raise SearchTimeoutError(why)
    if any("d" not in fields for _, fields in rows):  # RESP2: no warning, but a row without it
        raise ServerRefusedError("a calibration KNN query came back partial (a row without 'd')")
    return [(doc, float(text(fields["d"]))) for doc, fields in rows]


def _rows(reply: Any) -> list[tuple[str, dict[str, Any]]]:
    """The ``(id, fields)`` rows of an FT.SEARCH reply (a map under RESP3, a list under RESP2;
    fields only as ``RETURN`` asked)."""
    if isinstance(reply, Mapping):
        results = reply.get("results", reply.get(b"results", []))
        out = []
        for r in results:
            attrs = r.get("extra_attributes", r.get(b"extra_attributes", {})) or {}
            out.append((text(r.get("id", r.get(b"id"))), {text(k): v for k, v in attrs.items()}))
        return out
    rest = list(reply[1:])
    rows: list[tuple[str, dict[str, Any]]] = []
    i = 0
    while i < len(rest):
        doc = text(rest[i])
        fields: dict[str, Any] = {}
        if i + 1 < len(rest) and isinstance(rest[i + 1], list):
            pairs = rest[i + 1]
            fields = {text(k): v for k, v in zip(pairs[::2], pairs[1::2])}
            i += 1
        rows.append((doc, fields))
        i += 1
    return rows


class RedisProbe:
    """Commands over one vector index: its document count, a random sample of its vectors, and the
    ``k`` nearest documents of queries exactly (``HYBRID_POLICY ADHOC_BF``) or through HNSW."""

    #: The widest ``EF_RUNTIME`` tried (the server takes more; a wider one costs about a scan).
    max_breadth = 4000

    def __init__(self, keys: Keys, spec: IndexSpec) -> None:
        self.index = keys.index(spec)
        self.dtype = vector_dtype(spec)[1]
        self.dims = spec.dims
        self.docs = keys.vector_docs
        self.kept_in = keys.calibration
        # Another graph (other ``m``, ``ef_construction``) needs another breadth.
        build = ",".join(f"{k}={spec.ann[k]}" for k in ("m", "ef_construction") if k in spec.ann)
        self.field = f"{self.index}({build})"
        #: Whether the index has the exact twin (``redis/schema.py``): read by :meth:`count`.
        self.twin = False

    def count(self) -> Steps:
        """The number of documents (items with vectors) in the index, and whether it has the
        exact twin (its ``FT.INFO``)."""
        info, reply = yield Round(
            [
                Call(("FT.INFO", self.index)),
                Call(count_command(self.index, "*")),
            ]
        )
        self.twin = has_attribute(info, EXACT_TWIN)
        return total_results(reply)

    def sample(self, n: int) -> Steps:
        """Up to ``n`` stored vectors (each document's first, of the index's size) of documents
        drawn at random: keys drawn with ``RANDOMKEY`` (:meth:`_draw`), the rest (a database full
        of other keys, or ``RANDOMKEY`` refused) by random offsets of the index, one per round. The
        index is counted only for those offsets: the check counted it just before, and the count
        walks the index (33 ms at 300,000 documents)."""
        docs = yield from self._draw(n)
        offsets: list[int] = []
        if len(docs) < n:
            total = yield from self.count()
            offsets = random.sample(range(total), min(n, total))
        for offset in offsets:  # n distinct positions: enough whatever the draws found
            if len(docs) >= n:
                break
            call = Call(
                ("FT.SEARCH", self.index, "*", "NOCONTENT", "LIMIT", offset, 1, "DIALECT", 2)
            )
            (reply,) = yield Round([call])
            docs.update(dict.fromkeys(doc for doc, _ in _rows(reply)))
        if not docs:
            return []
        replies = yield Round([Call(("JSON.GET", doc, "$.e[0]")) for doc in docs])
        out = []
        for reply in replies:
            got = json.loads(text(reply)) if reply is not None else []
            if got and len(got[0]) == self.dims:
                out.append([float(x) for x in got[0]])
        return out

    def _draw(self, n: int) -> Steps:
        """Up to ``n`` distinct vector documents' names among keys drawn with ``RANDOMKEY``, in at
        most :data:`DRAW_ROUNDS` rounds of :data:`DRAWS` draws per document still wanted (a vector
        document is one key in two of a store's prefix; other stores' and applications' keys
        dilute the draws). An error (a user whose ACL denies ``RANDOMKEY``) draws nothing."""
        docs: dict[str, None] = {}
        for _ in range(DRAW_ROUNDS):
            wanted = n - len(docs)
            if wanted <= 0:
                break
            replies = yield Round([Call(("RANDOMKEY",))] * (DRAWS * wanted), check=False)
            if any(isinstance(r, Exception) for r in replies):
                break
            names = (text(r) for r in replies if r is not None)
            docs.update(dict.fromkeys(d for d in names if d.startswith(self.docs)))
        return dict.fromkeys(list(docs)[:n])

    def query(self, vector: list[float]) -> list[float]:
        """Query vectors are float lists here, as in the store's plans."""
        return vector

    def _knn(
        self, queries: Sequence[list[float]], k: int, head: str, tail: str, field: str = "e"
    ) -> Steps:
        calls = [
            Call(
                (
                    "FT.SEARCH",
                    self.index,
                    f"{head}=>[KNN {int(k)} @{field} $B{tail} AS d]",
                    "SORTBY",
                    "d",
                    "ASC",
                    "LIMIT",
                    0,
                    int(k),
                    "RETURN",
                    1,
                    "d",
                    "PARAMS",
                    2,
                    "B",
                    np.asarray(q, self.dtype).tobytes(),
                    "DIALECT",
                    2,
                )
            )
            for q in queries
        ]
        hits = []
        for call in calls:  # a round each: see the module docstring
            (reply,) = yield Round([call])
            hits.append(_hits(reply))
        return hits

    def exact(self, queries: Sequence[list[float]], k: int) -> Steps:
        """The exact ``k`` nearest documents of each query: a scan of the exact twin, or of the
        HNSW field's documents (``HYBRID_POLICY ADHOC_BF``) in an index made without one."""
        if self.twin:
            return (yield from self._knn(queries, k, "*", "", EXACT_TWIN))
        return (yield from self._knn(queries, k, f"({EVERY})", ADHOC))

    def ann(self, queries: Sequence[list[float]], k: int, breadth: int) -> Steps:
        """The HNSW graph's ``k`` nearest documents of each query at ``EF_RUNTIME = breadth``."""
        return (yield from self._knn(queries, k, "*", f" EF_RUNTIME {int(breadth)}"))

    def kept(self) -> Steps:
        """The measurement kept for this index (``None``: none)."""
        (reply,) = yield Round([Call(("HGET", self.kept_in, self.field))])
        return None if reply is None else text(reply)

    def keep(self, measurement: str) -> Steps:
        """Keep ``measurement`` for this index."""
        yield Round([Call(("HSET", self.kept_in, self.field, measurement))])
