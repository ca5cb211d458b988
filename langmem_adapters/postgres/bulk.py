"""Bulk loads on Postgres: many vectors go into a new or emptied vector table without its ANN index,
which is then built once over all of them, instead of one HNSW graph insert per row.

Measured on the embedded server (``benchmarks/bench_bulk.py``): a live HNSW index takes ~200-500
inserts/s, while loading without it and building it at the end is several times faster. Used by
``bulk_load()`` (and so ``restore``, ``migrate`` and the CLI's ``import``):

- :func:`drop_if_empty_plan` at the start: drop the table's ANN index if the table holds no vector
  (nothing to lose: building it again over what is loaded is the fast path);
- :func:`build_index_plan` at the end: create the index if it is missing, in one transaction with
  ``maintenance_work_mem`` raised for the graph (:func:`build_memory_kb`, so pgvector builds in
  memory) and the server's parallel maintenance workers, then ``ANALYZE`` the tables (also when the
  index was kept: the load changed the statistics all the same).

While the index is missing, vector searches still answer, by exact scans (slower on a large table).
The build is plain ``CREATE INDEX`` (not ``CONCURRENTLY``): transactional, so a crash leaves no
half-built index, and ``setup()`` (its ``CREATE INDEX IF NOT EXISTS``) or the next bulk load brings a
missing one back; during the build, searches answer and writers of the vector table wait.
"""

from __future__ import annotations

import psycopg

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.schema import ann_index_ddl, ann_index_name
from langmem_adapters.postgres.sql import Round, Statement

__all__ = ["BUILD_MEMORY_CAP_KB", "build_index_plan", "build_memory_kb", "drop_if_empty_plan"]

#: The most ``maintenance_work_mem`` a build asks for (a parallel build reserves it as shared memory).
BUILD_MEMORY_CAP_KB = 2 * 1024 * 1024

# Out of (shared) memory for a parallel build, e.g. a container's small /dev/shm: build serially.
_RESOURCES = (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory)


def build_memory_kb(rows: int, spec: IndexSpec) -> int:
    """``maintenance_work_mem`` (kB) for building the ANN index over ``rows`` vectors in memory: an
    HNSW graph element holds its vector and ``2 m`` level-0 neighbours (plus upper levels and
    overhead); with a quarter more for margin, capped at :data:`BUILD_MEMORY_CAP_KB`."""
    vector = spec.dims * (2 if spec.vector_type == "halfvec" else 4) + 8
    neighbours = 2 * int(spec.ann.get("m", 16)) * 12
    per_row = vector + neighbours + 160
    return min(BUILD_MEMORY_CAP_KB, 64 * 1024 + rows * per_row * 5 // 4 // 1024)


def drop_if_empty_plan(table: str, spec: IndexSpec) -> Steps[bool]:
    """Drop the ANN index of the vector table ``table`` if the table holds no vector (a load into it
    then builds the index once, at the end); whether it dropped. No-op for a table (or index) that
    does not exist yet; the store calls it for an ANN index only."""
    name = ann_index_name(table, spec)
    (found,) = yield Round([Statement("SELECT to_regclass(%s) IS NOT NULL", [name])])
    if not found[0][0]:
        return False
    (rows,) = yield Round([Statement(f"SELECT EXISTS (SELECT 1 FROM {table})")])
    if rows[0][0]:
        return False
    yield Round([Statement(f"DROP INDEX IF EXISTS {name}", fetch=False)])
    return True


def build_index_plan(table: str, spec: IndexSpec, *, analyze: tuple[str, ...] = ()) -> Steps[bool]:
    """Create the ANN index of the vector table ``table`` if it is missing, with memory for an
    in-memory build and the server's ``max_parallel_maintenance_workers`` (serially if the server
    cannot give a parallel build its shared memory), then ``ANALYZE`` it and the tables
    ``analyze``, whether it built or the index was there (a load into a table that kept its index
    changes its statistics as much: the hybrid lexical side sizes the table and weighs its words by
    them); whether it built. One transaction: a failed build leaves no index, and the table as it
    was."""
    analyzed = [Statement(f"ANALYZE {name}", fetch=False) for name in (table, *analyze)]
    ddl = ann_index_ddl(table, spec)
    if ddl is None:
        yield Round(analyzed)
        return False
    sql = "SELECT to_regclass(%s) IS NULL AND to_regclass(%s) IS NOT NULL"
    (found,) = yield Round([Statement(sql, [ann_index_name(table, spec), table])])
    if not found[0][0]:
        yield Round(analyzed)
        return False
    (count,) = yield Round([Statement(f"SELECT count(*) FROM {table}")])
    memory = build_memory_kb(int(count[0][0]), spec)
    build = [Statement(ddl, fetch=False), *analyzed]
    try:
        yield Round([_settings(memory), *build])
    except _RESOURCES:
        yield Round([_settings(memory, serial=True), *build])
    return True


def _settings(memory_kb: int, *, serial: bool = False) -> Statement:
    """Transaction-local build settings: at least ``memory_kb`` of ``maintenance_work_mem`` (never
    less than the server's), and no parallel workers if ``serial``."""
    sql = (
        "SELECT set_config('maintenance_work_mem', greatest(%s::bigint, "
        "(SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'))::text, true)"
    )
    if serial:
        sql += ", set_config('max_parallel_maintenance_workers', '0', true)"
    return Statement(sql, [memory_kb], fetch=False)
