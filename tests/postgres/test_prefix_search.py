"""Plain search under a prefix walks each namespace newest first on the ``(ns, updated_at DESC,
key)`` index and merges the walks: the same pages as a scan of the prefix, a plan that reads only
the page's rows of each namespace, and the index added to a store made before it (schema step 1)."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_adapters.core.filters import parse_filter
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.postgres.schema import SCHEMA_VERSION
from langmem_adapters.postgres.search import WALK_BELOW, plain_search
from tests import servers


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    """A fresh store on its own tables."""
    with PostgresStore.from_conn_string(
        servers.postgres_dsn(), table_prefix=f"walk{uuid.uuid4().hex[:8]}"
    ) as s:
        s.setup()
        yield s


def _fill(store: PostgresStore) -> None:
    """Items at a prefix and below it, in labels sharing text (u1 / u10), written in batches (equal
    updated_at within one) and singly, some overwritten later and some deleted."""
    rng = random.Random(3)
    spaces = [("m", "u1"), ("m", "u1", "a"), ("m", "u1", "b"), ("m", "u10", "a"), ("m", "u2")]
    for b in range(6):
        store.batch(
            [
                PutOp(
                    rng.choice(spaces), f"k{rng.randrange(60)}", {"kind": rng.choice("xyz"), "b": b}
                )
                for _ in range(25)
            ]
        )
        store.put(("m", "u1", "a"), f"single{b}", {"kind": "x", "b": b})
    store.delete(("m", "u1", "b"), "k1")


@pytest.mark.parametrize("prefix", [("m", "u1"), ("m",), ("m", "u1", "a"), ("m", "u3")])
@pytest.mark.parametrize("flt", [None, {"kind": "x"}, {"kind": {"$ne": "y"}, "b": {"$gte": 2}}])
def test_walk_pages_equal_a_scan_of_the_prefix(
    store: PostgresStore, prefix: tuple[str, ...], flt: dict[str, object] | None
) -> None:
    _fill(store)
    # A limit beyond WALK_BELOW takes the scan: the reference order of every match.
    every = store.search(prefix, filter=flt, limit=WALK_BELOW + 1)
    assert all(r.namespace[: len(prefix)] == prefix for r in every)
    for offset, limit in [(0, 10), (0, 1), (3, 7), (20, 10), (len(every), 5)]:
        page = store.search(prefix, filter=flt, limit=limit, offset=offset)
        assert [(r.namespace, r.key, r.value) for r in page] == [
            (r.namespace, r.key, r.value) for r in every[offset : offset + limit]
        ]


def test_walk_reads_each_namespace_on_the_index(store: PostgresStore) -> None:
    store.batch(
        [
            PutOp(("m", "u1", f"t{i % 5}"), f"k{i}", {"kind": ["fact", "note"][i % 7 == 0]})
            for i in range(4000)
        ]
    )
    dsn = servers.postgres_dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {store.tables.store}")
        conn.execute(f"ANALYZE {store.tables.namespaces}")
        op = SearchOp(("m", "u1"), {"kind": "fact"}, 10, 0)
        st = plain_search(store.tables, op, parse_filter(op.filter))
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN (ANALYZE, TIMING OFF) " + st.sql, st.params)
        )
    assert "Bitmap Heap Scan" not in plan
    # Each of the five namespaces stops after its first ten matches (of its 800 items).
    walk = [line for line in plan.splitlines() if f"{store.tables.store}_ns_updated_idx" in line]
    assert len(walk) == 1 and "Index Scan" in walk[0], plan
    assert re.search(r"actual rows=10(\.00)? loops=5", walk[0]), plan


def test_setup_adds_the_index_to_a_store_made_before_it(store: PostgresStore) -> None:
    t = store.tables
    index = f"{t.store}_ns_updated_idx"
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
        conn.execute(f"DROP INDEX {index}")
        conn.execute(f"DELETE FROM {t.migrations} WHERE v >= 1")
        store.put(("m", "u1"), "k", {"kind": "x"})
        store.setup()
        found = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [index])
        assert found.fetchone() == (1,)
        versions = conn.execute(f"SELECT array_agg(v ORDER BY v) FROM {t.migrations}").fetchone()
    assert versions == (list(range(SCHEMA_VERSION)),)
    assert [r.key for r in store.search(("m",), filter={"kind": "x"})] == ["k"]
