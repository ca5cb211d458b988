"""Benchmark bulk loads into ``langmem_adapters.postgres.PostgresStore`` (items/s), on the embedded
PostgreSQL (started in a temporary directory, removed at exit), with 128-d ``HashEmbeddings``.

Phases, each into fresh tables:

- **puts into a live index**: ``batch`` of 100 indexed puts at a time into a store whose HNSW index
  takes every vector as it comes (the baseline: the issue measured ~185 items/s over 100k items);
  on ``--baseline-n`` items (default 10k: the rate falls as the index grows, so this overstates
  the baseline at 100k);
- **restore into a live index**: ``restore`` into a store already holding a vector, so its index
  stays and takes each row (what every restore did before bulk loads), on ``--baseline-n`` items;
- **restore (bulk)**: ``restore`` of ``--n`` items into an empty indexed store: loaded without the
  index, which is built once at the end (load and build timed apart);
- **migrate** from that store into a new one through ``langmem_adapters.transfer.migrate`` (pages of
  500, checkpointed: many restore calls in one bulk load), and **import** of its JSON lines export
  through the CLI (``langmem-adapters import``);
- with ``--redis``, **restore on Redis** (query engine) for comparison: RediSearch indexes on write.

Every rate is printed with its ratio to the first phase and to the issue's 185 items/s.

Examples::

    python benchmarks/bench_bulk.py --quick               # CI: 2k items, well under a minute
    python benchmarks/bench_bulk.py                       # 100k items (several minutes)
    python benchmarks/bench_bulk.py --n 100000 --baseline-n 100000 --json bulk.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langmem_adapters.cli.parser import main as cli_main
from langmem_adapters.core.records import StoredItem
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.postgres import PostgresStore, embedded_dsn
from langmem_adapters.transfer import StoreSource, migrate, write_items

DIMS = 128
BATCH = 100
NAMESPACES = 100
#: The issue's measurement: 100k indexed items through batched puts into a live HNSW index.
ISSUE_BASELINE = 185.0
T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def make_records(n: int, seed: int = 7) -> list[StoredItem]:
    """``n`` items over ``NAMESPACES`` namespaces, each a 12-word text (its vector) and a number."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    return [
        StoredItem(
            ("bench", f"user{i % NAMESPACES}"),
            f"m{i}",
            {"text": " ".join(rng.choices(vocab, k=12)), "n": i},
            T0,
            T0,
            None,
            None,
        )
        for i in range(n)
    ]


def index_config() -> dict[str, Any]:
    """The stores' index: 128-d hash embeddings of ``text``, pgvector's default HNSW build."""
    return {"dims": DIMS, "embed": HashEmbeddings(DIMS), "fields": ["text"]}


class Bench:
    """One benchmark run on one embedded server: fresh table prefixes per phase."""

    def __init__(self, dsn: str, work: Path) -> None:
        self.dsn, self.work = dsn, work
        self.notices: list[str] = []
        self._n = 0

    @contextmanager
    def store(self, name: str) -> Iterator[PostgresStore]:
        """A new, set-up store on fresh tables, its server notices kept (a build spilling out of
        memory says so)."""
        self._n += 1
        prefix = f"bulk{self._n}_{name}"
        with PostgresStore.from_conn_string(
            self.dsn,
            index=index_config(),  # type: ignore[arg-type]
            table_prefix=prefix,
        ) as store:
            store.setup()
            conn: Any = store.conn
            conn.add_notice_handler(lambda d: self.notices.append(f"{prefix}: {d.message_primary}"))
            yield store

    def puts_live(self, records: list[StoredItem]) -> dict[str, Any]:
        """Batched indexed puts into a live HNSW index."""
        with self.store("puts") as store:
            start = time.perf_counter()
            for i in range(0, len(records), BATCH):
                store.batch([PutOp(r.namespace, r.key, r.value) for r in records[i : i + BATCH]])
            return timed(len(records), time.perf_counter() - start)

    def restore_live(self, records: list[StoredItem]) -> dict[str, Any]:
        """``restore`` into a store that already holds a vector: its index takes every row."""
        with self.store("live") as store:
            store.put(("seed",), "seed", {"text": "keeps the index live"})
            start = time.perf_counter()
            store.restore(records)
            return timed(len(records), time.perf_counter() - start)

    def restore_bulk(self, records: list[StoredItem]) -> tuple[dict[str, Any], str]:
        """``restore`` into an empty store (one bulk load; the load and the build timed apart);
        returns the result and the store's table prefix (the source of the next phases)."""
        with self.store("restore") as store:
            start = time.perf_counter()
            with store.bulk_load():
                store.restore(records)
                loaded = time.perf_counter()
            end = time.perf_counter()
            check_search(store, records)
            result = timed(len(records), end - start)
            result.update(load_s=round(loaded - start, 2), build_s=round(end - loaded, 2))
            return result, store.tables.prefix

    def migrate(self, source_prefix: str, n: int) -> dict[str, Any]:
        """``transfer.migrate`` (pages of 500, checkpointed) from the restored store into a new one."""
        with (
            PostgresStore.from_conn_string(self.dsn, table_prefix=source_prefix) as source,
            self.store("migrate") as target,
        ):
            start = time.perf_counter()
            result = migrate(StoreSource(source), target, self.work / "checkpoint.json")
            elapsed = time.perf_counter() - start
            assert result.finished and result.copied == n, result
            return timed(n, elapsed)

    def import_(self, source_prefix: str, n: int) -> dict[str, Any]:
        """``langmem-adapters import`` of the restored store's JSON lines into a new store."""
        path = self.work / "export.jsonl"
        with (
            PostgresStore.from_conn_string(self.dsn, table_prefix=source_prefix) as source,
            path.open("w", encoding="utf-8") as f,
        ):
            write_items(source.iter_items(), f)
        self._n += 1
        url = f"{self.dsn}&table_prefix=bulk{self._n}_import"
        argv = ["-q", "import", url, "--embed", f"hash:{DIMS}", "--fields", "text", "-i", str(path)]
        start = time.perf_counter()
        assert cli_main(argv) == 0
        return timed(n, time.perf_counter() - start)


def restore_redis(records: list[StoredItem]) -> dict[str, Any]:
    """``restore`` on Redis with the query engine (started from its wheel), for comparison."""
    import redis

    from langmem_adapters.redis import RedisStore
    from tests import servers

    client = redis.Redis.from_url(servers.redis_url(modules=True))
    try:
        store = RedisStore(client, index=index_config(), prefix="bulkbench")  # type: ignore[arg-type]
        store.setup()
        start = time.perf_counter()
        store.restore(records)
        return timed(len(records), time.perf_counter() - start)
    finally:
        client.close()


def check_search(store: PostgresStore, records: list[StoredItem]) -> None:
    """The loaded store answers: an item's own text finds it first."""
    for r in records[:: max(1, len(records) // 20)]:
        top = store.search(("bench",), query=r.value["text"], limit=1)
        assert top and top[0].key == r.key, (r.key, top)


def timed(n: int, seconds: float) -> dict[str, Any]:
    """A phase's result."""
    return {"items": n, "seconds": round(seconds, 2), "items_per_s": round(n / seconds, 1)}


def report(results: dict[str, dict[str, Any]], markdown: bool) -> str:
    """The results as a table, with each rate's ratio to the first phase and to the issue's."""
    base = next(iter(results.values()))["items_per_s"]
    head = ["phase", "items", "seconds", "items/s", "x first phase", f"x {ISSUE_BASELINE:g}/s"]
    rows = [
        [
            name,
            str(r["items"]),
            f"{r['seconds']:.1f}"
            + (f" (load {r['load_s']}, build {r['build_s']})" if "build_s" in r else ""),
            f"{r['items_per_s']:.0f}",
            f"{r['items_per_s'] / base:.1f}",
            f"{r['items_per_s'] / ISSUE_BASELINE:.1f}",
        ]
        for name, r in results.items()
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(row, widths)) for row in [head, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="items of the bulk phases")
    parser.add_argument(
        "--baseline-n", type=int, default=10_000, help="items of the live-index phases"
    )
    parser.add_argument("--quick", action="store_true", help="2k items, 1k for the baselines (CI)")
    parser.add_argument("--redis", action="store_true", help="also restore into Redis")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    n, baseline_n = (2_000, 1_000) if args.quick else (args.n, args.baseline_n)
    wall = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="langmem-bench-bulk-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    bench = Bench(embedded_dsn(work / "pg"), work)
    records = make_records(max(n, baseline_n))
    results: dict[str, dict[str, Any]] = {}
    results["puts into a live index"] = bench.puts_live(records[:baseline_n])
    results["restore into a live index"] = bench.restore_live(records[:baseline_n])
    results["restore (bulk)"], source = bench.restore_bulk(records[:n])
    results["migrate"] = bench.migrate(source, n)
    results["import (CLI)"] = bench.import_(source, n)
    if args.redis:
        results["restore on Redis"] = restore_redis(records[:n])
    print(report(results, args.markdown))
    start = time.perf_counter()
    HashEmbeddings(DIMS).embed_documents([r.value["text"] for r in records[:n]])
    print(
        f"embedding the {n} texts alone (in every bulk phase): {time.perf_counter() - start:.1f} s"
    )
    spilled = [m for m in bench.notices if "no longer fits" in m]
    print(
        f"wall time {time.perf_counter() - wall:.0f} s; index builds out of memory: {spilled or 'none'}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
