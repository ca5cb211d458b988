"""The Redis side of calibration (:mod:`langmem_adapters.core.calibration`): the commands that count
and sample the vector index and search it exactly (a brute-force scan) and through HNSW at a given
``EF_RUNTIME``."""

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

__all__ = ["RedisProbe"]


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
        """Up to ``n`` stored vectors (each document's first) at random positions of the index."""
        total = yield from self.count()
        if not total:
            return []
        offsets = random.sample(range(total), min(n, total))
        calls = [
            Call(("FT.SEARCH", self.index, "*", "NOCONTENT", "LIMIT", o, 1, "DIALECT", 2))
            for o in offsets
        ]
        docs = [doc for reply in (yield Round(calls)) for doc, _ in _rows(reply)]
        if not docs:
            return []
        replies = yield Round([Call(("JSON.GET", doc, "$.e[0]")) for doc in docs])
        out = []
        for reply in replies:
            got = json.loads(text(reply)) if reply is not None else []
            if got:
                out.append([float(x) for x in got[0]])
        return out

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
        return [_hits(reply) for reply in (yield Round(calls))]

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
