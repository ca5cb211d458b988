"""The Postgres side of calibration (:mod:`langmem_adapters.core.calibration`): the statements that
count, sample and search the vector table exactly and through the HNSW index at a given breadth,
and the calibration's own connection, so that a measurement never holds the store's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.recall import Hit
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.connection import (
    AsyncConnections,
    AsyncSession,
    Connections,
    Session,
)
from langmem_adapters.postgres.schema import Tables, ann_index_name
from langmem_adapters.postgres.search import DISTANCE_OPERATOR, scanned
from langmem_adapters.postgres.sql import TRUE, Answer, Round, Sql, Statement, vec_literal

__all__ = ["PostgresProbe", "async_calibration_session", "calibration_session"]


class PostgresProbe:
    """Plans over one vector table: its count, a random sample of its vectors, and the ``k``
    nearest rows of queries exactly (a scan) or through the HNSW index at a breadth."""

    #: pgvector's largest ``hnsw.ef_search``.
    max_breadth = 1000

    def __init__(self, t: Tables, spec: IndexSpec) -> None:
        self.table = t.vectors(spec)
        self.dist = f"(v.embedding {DISTANCE_OPERATOR[spec.distance]} %s::{spec.vector_type})"
        self.kept_in = t.calibration
        # The index measured: its table (generation included) and kind; and its build options, as
        # another graph (other ``m``, ``ef_construction``) needs another breadth.
        build = ",".join(f"{k}={spec.ann[k]}" for k in ("m", "ef_construction") if k in spec.ann)
        self.index = f"{ann_index_name(self.table, spec)}({build})"

    def count(self) -> Steps[int]:
        """The number of vectors in the table."""
        (rows,) = yield Round([Statement(f"SELECT count(*) FROM {self.table}")])
        return int(rows[0][0])

    def sample(self, n: int) -> Steps[list[list[float]]]:
        """Up to ``n`` stored vectors at random."""
        sql = f"SELECT embedding::text FROM {self.table} ORDER BY random() LIMIT {int(n)}"
        (rows,) = yield Round([Statement(sql)])
        return [json.loads(r[0]) for r in rows]

    def query(self, vector: list[float]) -> str:
        """A vector as the literal that queries are sent as."""
        return vec_literal(vector)

    def exact(self, queries: Sequence[str], k: int) -> Steps[list[list[Hit]]]:
        """The exact ``k`` nearest rows of each query, by the store's own scan of the whole table
        (:func:`~langmem_adapters.postgres.search.scanned`, as under a prefix holding it,
        ``Shape.WHOLE_SCAN``), so ``exact_ms`` is what users wait."""
        every, columns = TRUE, "v.ns, v.key, v.field"
        scans = [scanned(self.table, Sql(self.dist, [q]), every, k, columns) for q in queries]
        rows = yield Round([scan.statement() for scan in scans])
        return _hits(rows)

    def ann(self, queries: Sequence[str], k: int, breadth: int) -> Steps[list[list[Hit]]]:
        """The index's ``k`` nearest rows of each query at ``hnsw.ef_search = breadth`` (settings
        local to the round's transaction; sorts off, so the plan is the index's)."""
        settings = Statement(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', 'off', true), set_config('enable_sort', 'off', true)",
            [str(int(breadth))],
        )
        sql = (
            f"SELECT v.ns, v.key, v.field, {self.dist} AS d FROM {self.table} v "
            f"ORDER BY {self.dist} LIMIT {int(k)}"
        )
        rows = yield Round([settings, *(Statement(sql, [q, q]) for q in queries)], tx=True)
        return _hits(rows[1:])

    def kept(self) -> Steps[str | None]:
        """The measurement kept for this index (``None``: none, or a schema set up before the
        ``<prefix>_calibration`` table existed)."""
        (rows,) = yield Round([Statement("SELECT to_regclass(%s) IS NOT NULL", [self.kept_in])])
        if not rows[0][0]:
            return None
        sql = f"SELECT measurement::text FROM {self.kept_in} WHERE idx = %s"
        (rows,) = yield Round([Statement(sql, [self.index])])
        return str(rows[0][0]) if rows else None

    def keep(self, measurement: str) -> Steps[None]:
        """Keep ``measurement`` for this index (nothing where the table is not set up yet)."""
        (rows,) = yield Round([Statement("SELECT to_regclass(%s) IS NOT NULL", [self.kept_in])])
        if rows[0][0]:
            sql = (
                f"INSERT INTO {self.kept_in} (idx, measurement) VALUES (%s, %s::jsonb) "
                "ON CONFLICT (idx) DO UPDATE SET measurement = excluded.measurement, "
                "updated_at = now()"
            )
            yield Round([Statement(sql, [self.index, measurement], fetch=False)])


def _hits(rows: Answer) -> list[list[Hit]]:
    """Each query's rows (``ns, key, field, distance``) as hits."""
    return [[((r[0], r[1], r[2]), float(r[3])) for r in got] for got in rows]


@contextmanager
def calibration_session(connections: Connections) -> Iterator[Callable[[Round], Answer]]:
    """How a calibration executes its rounds: each in a short session of its own, on the store's
    pool or on a connection opened for it (closed at the end), never under the store's lock."""
    own = connections.spare()
    try:

        def execute(request: Round) -> Answer:
            with Session(own) as run:
                return run(request)

        yield execute
    finally:
        if own is not connections:
            own.close()


@asynccontextmanager
async def async_calibration_session(
    connections: AsyncConnections,
) -> AsyncIterator[Callable[[Round], Awaitable[Answer]]]:
    """The async twin of :func:`calibration_session`."""
    own = await connections.spare()
    try:

        async def execute(request: Round) -> Answer:
            async with AsyncSession(own) as run:
                return await run(request)

        yield execute
    finally:
        if own is not connections:
            await own.close()
