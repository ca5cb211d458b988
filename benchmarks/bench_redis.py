"""Benchmark ``langmem_adapters.redis.RedisStore`` against ``langgraph.store.redis.RedisStore``.

The workloads, checks and table are those of :mod:`benchmarks.bench_postgres` (same dataset, put
single / batch of 100, get, filtered search, list_namespaces, indexed put, vector search qps and
recall@10 against numpy exact search); only the server hooks are swapped for Redis. Both stores
run on the same Redis 8.2 + RediSearch + RedisJSON server in one run, each used the way a new user
would (``from_conn_string(url, index=...)`` + ``setup()``). Every phase uses fresh key prefixes, so
a given ``--url`` is never flushed. ``--plain-sizes`` also times our plain mode (no modules: numpy
scoring over the namespace's items) at several namespace sizes.

One workload is Redis's own (issue #16): a filtered search over a prefix that holds several
sub-namespaces, ``search(("memories", user), filter={"kind": "fact"}, limit=10)`` over 50 users x 5
topic namespaces ``("memories", user, topic)`` (the N items loaded fresh), every page checked
against the documented order (newest first, then namespace and key).

Examples::

    python -m benchmarks.bench_redis --quick
    python -m benchmarks.bench_redis --n 10000 --markdown --plain-sizes 1000,10000,50000
    python -m benchmarks.bench_redis --recall-100k
    python -m benchmarks.bench_redis --only-prefix --n 10000 --repeat 3

The user-prefix search is also timed against the right answer sent by hand on the bare server
(:class:`BarePage`): the ratio ours / bare is printed (target >= 0.8).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import redis
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.redis import RedisStore as OfficialStore

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import bench_postgres as bench
from langmem_adapters.redis import RedisStore as OursStore
from langmem_adapters.redis.tokens import path_token, token

# Targets (ours / official) from the issue.
TARGETS: dict[str, float] = {
    "put (single)": 2.0,
    "put (batch of 100)": 5.0,
    "get": 1.5,
    "search, filter kind (str eq)": 1.5,
    "search, filter n (num eq)": 1.5,
    "search, user prefix over 5 topics (str eq)": 1.5,
    "vector search (global)": 1.0,
    "vector search (in namespace)": 1.0,
}


def resolve_url(arg: str | None, modules: bool = True) -> str:
    """``arg`` (``--url``), else ``LANGMEM_BENCH_REDIS_URL``, else a fresh Redis with the Query
    Engine; without ``modules``, ``LANGMEM_BENCH_REDIS_PLAIN_URL``, else a fresh Redis without."""
    if arg:
        return arg
    if env := os.environ.get(
        "LANGMEM_BENCH_REDIS_URL" if modules else "LANGMEM_BENCH_REDIS_PLAIN_URL"
    ):
        return env
    from tests import servers

    return servers.redis_url(modules=modules)


def server_info(dsn: str) -> dict[str, str]:
    """Redis and module versions."""
    client = redis.Redis.from_url(dsn)
    try:
        modules = ", ".join(f"{m[b'name'].decode()} {m[b'ver']}" for m in client.module_list())
        return {"redis": str(client.info("server")["redis_version"]), "modules": modules}
    finally:
        client.close()


@contextmanager
def open_stores(
    url: str, schema: str, *, indexed: bool, dims: int
) -> Iterator[dict[str, BaseStore]]:
    """Both stores on fresh prefixes of the same server, set up as their docs say."""
    tag = uuid.uuid4().hex[:8]
    with ExitStack() as stack:
        ours = stack.enter_context(
            OursStore.from_conn_string(
                url,
                index=bench.index_config(dims) if indexed else None,  # type: ignore[arg-type]
                prefix=f"ours{tag}",
            )
        )
        official = stack.enter_context(
            OfficialStore.from_conn_string(
                url,
                index=bench.index_config(dims) if indexed else None,  # type: ignore[arg-type]
                store_prefix=f"off{tag}",
                vector_prefix=f"offv{tag}",
            )
        )
        official.setup()
        settle(url)
        yield {"ours": ours, "official": official}


def settle(url: str, timeout: float = 60.0) -> None:
    """Wait for the server's index scans to finish. ``FT.CREATE`` without ``SKIPINITIALSCAN`` scans
    the whole keyspace in a background thread, which the workloads would otherwise compete with."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        deadline = time.monotonic() + timeout
        for name in client.execute_command("FT._LIST"):
            while time.monotonic() < deadline:
                info = client.execute_command("FT.INFO", name)
                fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
                if float(fields.get("percent_indexed", 1)) >= 1.0:
                    break
                time.sleep(0.05)
    finally:
        client.close()


@contextmanager
def _ours_only(url: str, *, index: dict[str, Any] | None = None) -> Iterator[OursStore]:
    with (
        OursStore.from_conn_string(
            url,
            index=index,  # type: ignore[arg-type]
            prefix=f"ours{uuid.uuid4().hex[:8]}",
        ) as store
    ):
        yield store


def plain_sizes(url: str, sizes: Sequence[int], dims: int) -> list[dict[str, float]]:
    """Our plain mode with N items in one namespace: ms per filtered search and per vector search."""
    rows = []
    rng = random.Random(11)
    vocab = bench.make_vocab(rng)
    ns = ("bench", "one")
    for n in sizes:
        with (
            OursStore.from_conn_string(
                url,
                index=bench.index_config(dims),  # type: ignore[arg-type]
                prefix=f"plain{uuid.uuid4().hex[:8]}",
                mode="plain",
            ) as store
        ):
            for start in range(0, n, 500):
                store.batch(
                    [
                        PutOp(
                            ns,
                            f"m{i}",
                            {"text": bench.random_text(rng, vocab, 12), "kind": bench.KINDS[i % 5]},
                        )
                        for i in range(start, min(n, start + 500))
                    ]
                )
            row: dict[str, float] = {"items": n}
            for label, call in (
                ("filtered search ms", lambda: store.search(ns, filter={"kind": "note"}, limit=10)),
                (
                    "vector search ms",
                    lambda: store.search(ns, query=bench.random_text(rng, vocab, 6), limit=10),
                ),
            ):
                reps = max(3, min(50, 200_000 // n))
                t0 = time.perf_counter()
                for _ in range(reps):
                    call()
                row[label] = (time.perf_counter() - t0) / reps * 1000
            rows.append(row)
            print(
                f"  plain mode, {n:>7,} items in one namespace: "
                + ", ".join(f"{k} {v:.1f}" for k, v in row.items() if k != "items"),
                flush=True,
            )
    return rows


PREFIX_METRIC = "search, user prefix over 5 topics (str eq)"
USERS, TOPICS = 50, 5


def topic_namespaces() -> list[bench.Namespace]:
    """The ``USERS`` x ``TOPICS`` namespaces ``("memories", "user<u>", "topic<t>")``, user-major."""
    return [("memories", f"user{u}", f"topic{t}") for u in range(USERS) for t in range(TOPICS)]


def prefix_items(n: int, seed: int) -> list[bench.Item]:
    """``n`` items round-robin over :func:`topic_namespaces`, each value ``{"text", "kind", "n"}``
    with a fifth of every namespace a ``fact``: the agent-memory shape of issue #16, where a user's
    prefix holds five sub-namespaces (``bench_scale`` loads the same data)."""
    rng = random.Random(seed)
    vocab = bench.make_vocab(rng)
    nss = topic_namespaces()
    return [
        (
            nss[i % len(nss)],
            f"m{i}",
            {
                "text": bench.random_text(rng, vocab, 12),
                "kind": bench.KINDS[(i // len(nss)) % len(bench.KINDS)],
                "n": i,
            },
        )
        for i in range(n)
    ]


def expected_pages(
    items: Sequence[bench.Item],
) -> dict[bench.Namespace, list[tuple[bench.Namespace, str]]]:
    """Per user prefix, the (namespace, key) of ``search(prefix, filter={"kind": "fact"}, limit=10)`` in the
    documented order: newest first (``bench.load`` writes batch after batch, a batch's items share
    their timestamp), then namespace text, then key."""
    facts: dict[bench.Namespace, list[tuple[int, str, str, bench.Namespace]]] = {}
    for i, (ns, key, value) in enumerate(items):
        if value["kind"] == "fact":
            facts.setdefault(ns[:2], []).append((-(i // bench.BATCH), ".".join(ns), key, ns))
    return {
        user: [(ns, key) for _, _, key, ns in sorted(rows)[: bench.K]]
        for user, rows in facts.items()
    }


def phase_prefix(runner: bench.Runner, url: str, n: int) -> bench.Results:
    """Filtered search over a user's prefix holding five topic namespaces, ours and official."""
    items = prefix_items(n, runner.cfg.seed)
    want = expected_pages(items)
    users = sorted(want)
    with open_stores(url, bench.SCHEMA, indexed=False, dims=runner.cfg.dims) as stores:
        bench.load(runner, stores, items, PREFIX_METRIC)
        settle(url)

        def search(store: BaseStore, i: int) -> list[Any]:
            return store.search(users[i % len(users)], filter={"kind": "fact"}, limit=bench.K)

        def check(store: BaseStore, i: int) -> bool | str:
            user = users[i % len(users)]
            got = [(tuple(r.namespace), r.key) for r in search(store, i)]
            return got == want[user] or f"search {user} kind=fact: {got} != {want[user]}"

        bare = BarePage(url, stores["ours"])
        for name, store in stores.items():
            runner.check(PREFIX_METRIC, name, len(users), lambda i, s=store: check(s, i))
        runner.check(
            BARE_METRIC, "bare", len(users), lambda i: bare_check(bare, users[i % len(users)], want)
        )
        ops: dict[str, Callable[[int], object]] = {"bare": lambda i: bare(users[i % len(users)])}
        for name, store in stores.items():
            ops[name] = lambda i, s=store: search(s, i)
        rates = runner.rates(PREFIX_METRIC, ops)
        bare.close()
    print(
        f"  {BARE_METRIC}: ours {rates['ours']:,.0f}/s, bare {rates['bare']:,.0f}/s,"
        f" ratio {rates['ours'] / rates['bare']:.2f} (target >= {BARE_TARGET})",
        flush=True,
    )
    return {
        PREFIX_METRIC: {k: v for k, v in rates.items() if k != "bare"},
        BARE_METRIC: {"ours": rates["ours"], "bare": rates["bare"]},
    }


BARE_METRIC = "user prefix, kind=fact: ours / bare server's right answer"
BARE_TARGET = 0.8


class BarePage:
    """The right answer of the user-prefix search sent by hand on the bare server: one
    ``FT.SEARCH`` of our items index for the user's namespace token and the ``kind`` token, newest
    first (``SORTBY u DESC``) with the rows' meta and created_at, widened while the page's last row
    ties with the window's last (a batch shares updated_at), the ties broken by namespace and key
    here. The query text is built once per user: a hand-written query knows it."""

    def __init__(self, url: str, store: BaseStore) -> None:
        self.client = redis.Redis.from_url(url, protocol=2)  # a flat reply: the cheapest to read
        self.index = f"{store.keys.prefix}:items"  # type: ignore[attr-defined]
        self.kind = token("e", ("kind",), "fact")
        self.queries: dict[bench.Namespace, str] = {}

    def __call__(self, user: bench.Namespace) -> list[tuple[int, str, str, dict[str, Any]]]:
        query = self.queries.get(user)
        if query is None:
            query = self.queries[user] = f"(@p:{{{path_token('n', user)}}} @t:{{{self.kind}}})"
        window = bench.K + 1
        while True:
            reply = self.client.execute_command(
                *("FT.SEARCH", self.index, query, "SORTBY", "u", "DESC", "LIMIT", 0, window),
                *("RETURN", 2, "m", "c", "DIALECT", 2),
            )
            rows = []
            for fields in reply[2::2]:
                got = dict(zip(fields[::2], fields[1::2]))
                meta = json.loads(got[b"m"])
                rows.append((-meta["u"], ".".join(meta["ns"]), meta["k"], meta))
            full = len(rows) == window
            if not full or rows[bench.K - 1][0] != rows[-1][0]:
                break
            window *= 4
        rows.sort(key=lambda r: r[:3])
        return rows[: bench.K]

    def close(self) -> None:
        self.client.close()


def bare_check(
    bare: BarePage, user: bench.Namespace, want: dict[bench.Namespace, list[Any]]
) -> bool | str:
    """The hand-sent page is the documented page (the same as ours and the official PostgresStore)."""
    got = [(tuple(meta["ns"]), meta["k"]) for *_, meta in bare(user)]
    return got == want[user] or f"bare {user} kind=fact: {got} != {want[user]}"


def bare_summary(runs: list[bench.Results]) -> str:
    """The median over runs of each run's ours / bare ratio on the user-prefix search."""
    ratios = [r[BARE_METRIC]["ours"] / r[BARE_METRIC]["bare"] for r in runs if BARE_METRIC in r]
    if not ratios:
        return ""
    return f"{BARE_METRIC}: {statistics.median(ratios):.2f} (target >= {BARE_TARGET})"


def only_prefix(args: argparse.Namespace) -> dict[str, Any]:
    """``--only-prefix``: the user-prefix search alone (ours, official, bare server), each run."""
    cfg = bench.make_config(args)
    runner = bench.Runner(cfg)
    url = resolve_url(args.dsn)
    runs = [phase_prefix(runner, url, cfg.n) for _ in range(cfg.repeat)]
    print(bare_summary(runs))
    print(f"mismatches: {sum(runner.mismatches.values())} {dict(runner.mismatches) or ''}")
    return {"runs": runs, "mismatches": dict(runner.mismatches), "errors": dict(runner.errors)}


def install() -> None:
    """Point the shared benchmark at Redis: its phases call these module-level hooks."""
    bench.TARGETS = TARGETS
    if PREFIX_METRIC not in bench.ORDER:  # its row follows the other filtered searches
        bench.ORDER.insert(bench.ORDER.index("search, filter n (num eq)") + 1, PREFIX_METRIC)
    bench.open_stores = open_stores  # type: ignore[assignment]
    bench.resolve_dsn = resolve_url
    bench.server_info = server_info
    bench.schema_dsn = lambda dsn, schema: dsn
    bench.reset_schema = lambda dsn, schema: None
    bench.analyze = lambda dsn: None
    bench.OursStore = _OursFactory  # type: ignore[assignment,misc]


class _OursFactory:
    """``OursStore.from_conn_string`` as the 100k phase calls it (fresh prefix per run)."""

    from_conn_string = staticmethod(_ours_only)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The phases of :func:`benchmarks.bench_postgres.main` on Redis, with a Redis report header."""
    cfg = bench.make_config(args)
    t_start = time.perf_counter()
    url = resolve_url(args.dsn)
    runner = bench.Runner(cfg)
    info = server_info(url)
    print(f"server: Redis {info['redis']} ({info['modules']}); config: {cfg}", flush=True)
    report: dict[str, Any] = {"server": info, "config": cfg.__dict__}
    if not args.only_recall_100k:
        data = bench.Dataset.build(cfg.n, cfg.namespaces, cfg.seed)
        matrix = bench.embed_matrix([v["text"] for _, _, v in data.items], cfg.dims)
        rate_runs: list[bench.Results] = []
        recall_runs: list[bench.Results] = []
        for rep in range(cfg.repeat):
            print(f"[run {rep + 1}/{cfg.repeat}] plain store ...", flush=True)
            rates = bench.phase_plain(runner, url, data)
            print(f"[run {rep + 1}/{cfg.repeat}] user prefixes over topics ...", flush=True)
            rates.update(phase_prefix(runner, url, cfg.n))
            print(f"[run {rep + 1}/{cfg.repeat}] indexed store ...", flush=True)
            vrates, recalls = bench.phase_vectors(runner, url, data, matrix)
            rates.update(vrates)
            rate_runs.append(rates)
            recall_runs.append(recalls)
            print(bench.render(bench.table_rows(rates, recalls), markdown=False), flush=True)
        rows = bench.table_rows(
            bench.median_results(rate_runs),
            bench.median_results(recall_runs),
            bench.median_ratios(rate_runs),
        )
        print(f"\n{bench.summary_title(cfg)}:")
        print(bench.render(rows, markdown=args.markdown))
        print(bare_summary(rate_runs))
        report.update({"rows": rows, "runs": rate_runs, "recall_runs": recall_runs})
    if args.recall_100k or args.only_recall_100k:
        big = bench.phase_recall_100k(runner, url, args.recall_n)
        print(f"\nOurs at {args.recall_n:,} items (recall@10 vs numpy exact cosine):")
        for k, v in big.items():
            print(f"  {k}: {v:,.3f}" if isinstance(v, float) else f"  {k}: {v}")
        report["recall_100k"] = big
    report.update(
        errors=dict(runner.errors), mismatches=dict(runner.mismatches), messages=runner.messages
    )
    report["seconds"] = time.perf_counter() - t_start
    print(f"\nerrors: {sum(runner.errors.values())} {dict(runner.errors) or ''}")
    print(f"mismatches: {sum(runner.mismatches.values())} {dict(runner.mismatches) or ''}")
    print(f"total time: {report['seconds']:.1f} s")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sizes: list[int] = []
    if "--plain-sizes" in args:
        i = args.index("--plain-sizes")
        sizes = [int(x) for x in args[i + 1].split(",")]
        del args[i : i + 2]
    if "--url" in args:
        args[args.index("--url")] = "--dsn"
    prefix_only = "--only-prefix" in args
    if prefix_only:
        args.remove("--only-prefix")
    install()
    parsed = bench.parse_args(args)
    report = only_prefix(parsed) if prefix_only else run(parsed)
    if parsed.json_path:
        with open(parsed.json_path, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
    if sizes:
        print("\nPlain mode (no modules) sizing:")
        plain_sizes(resolve_url(parsed.dsn), sizes, 128)
    return 0


if __name__ == "__main__":
    sys.exit(main())
