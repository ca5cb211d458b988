"""Query Engine newest-first search shortcuts (``redis/search.py``, ``lua/search.lua``): the query
within the last window's updated_at range, and RediSearch's sort optimizer, each kept only when
provably the plain query's window. Pages with the shortcuts on are compared with the same store's
plain pages over randomized data (batch ties, overwrites, deletes, expired keys, small and large
prefixes, offsets and limits up to 1,000); ``MONITOR`` shows which queries a search ran."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.redis import RedisStore
from langmem_adapters.redis import search as search_module
from langmem_adapters.redis.schema import SORTED_FIELD, index_command
from langmem_adapters.redis.search import read_items_info
from langmem_adapters.redis.stats import RedisStats
from tests import servers
from tests.waiting import wait_until

KINDS = ("fact", "note", "task", "pref")


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(servers.redis_url(modules=True))
    yield c
    c.close()


def _store(client: redis.Redis, prefix: str | None = None) -> RedisStore:
    s = RedisStore(client, prefix=prefix or f"t{uuid.uuid4().hex[:12]}", mode="query_engine")
    s.setup()
    return s


def _shortcuts(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """Shortcuts from any index size (on) or never (off)."""
    monkeypatch.setattr(search_module, "SORT_FROM", 1 if on else 10**15)


def _page(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.namespace, i.key, i.updated_at, i.value) for i in items]


def _load(store: RedisStore, rng: random.Random, n: int) -> list[tuple[tuple[str, ...], str]]:
    """``n`` items in batches of 1-60 (a batch's items tie on updated_at): a big user prefix over
    six topics, two smaller users, a small old prefix and a sparse one (an item now and then)."""
    spots: list[tuple[tuple[str, ...], str]] = []
    i = 0
    while i < n:
        size = rng.randint(1, 60)
        ops = []
        for j in range(i, min(n, i + size)):
            r = rng.random()
            if j < 40:
                ns: tuple[str, ...] = ("small", "old")
            elif r < 0.03:
                ns = ("sparse", f"t{j % 3}")
            elif r < 0.7:
                ns = ("memories", "u0", f"topic{j % 6}")
            else:
                ns = ("memories", f"u{1 + j % 2}", f"topic{j % 3}")
            key = f"k{j}"
            spots.append((ns, key))
            ops.append(PutOp(ns, key, {"kind": KINDS[rng.randrange(4)], "n": j}))
        store.batch(ops)
        i += size
    return spots


def _churn(
    store: RedisStore, client: redis.Redis, rng: random.Random, spots: list[Any], step: int
) -> None:
    """Overwrite some items (they become the newest), delete some, let some expire natively."""
    picks = rng.sample(spots, 12)
    store.batch(
        [PutOp(ns, k, {"kind": KINDS[rng.randrange(4)], "n": -step}) for ns, k in picks[:6]]
    )
    store.batch([PutOp(ns, k, None) for ns, k in picks[6:9]])
    for ns, k in picks[9:]:
        client.pexpire(store.keys.item(".".join(ns), k), 1)
    time.sleep(0.005)


def _searches(rng: random.Random) -> list[dict[str, Any]]:
    prefixes = [
        ("memories",),
        ("memories", "u0"),
        ("memories", "u0", "topic1"),
        ("memories", "u1"),
        ("small",),
        ("sparse",),
        (),
    ]
    filters: list[dict[str, Any] | None] = [
        None,
        {"kind": "fact"},
        {"kind": {"$ne": "note"}},
        {"kind": {"$in": ["task", "pref"]}},
        {"n": {"$gt": 1500}},  # a range: checked on the rows read back
    ]
    out = []
    for _ in range(30):
        deep = rng.random() < 0.15
        out.append(
            {
                "prefix": rng.choice(prefixes),
                "filter": rng.choice(filters),
                "offset": rng.choice([0, 0, 0, 3, 17, 250]) if not deep else rng.randrange(400),
                "limit": rng.choice([1, 5, 10, 10, 33]) if not deep else rng.randrange(1, 1001),
            }
        )
    return out


@pytest.mark.parametrize(("seed", "n"), [(16, 3000), (17, 1200), (18, 6000)])
def test_pages_with_shortcuts_are_the_plain_pages(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch, seed: int, n: int
) -> None:
    rng = random.Random(seed)
    store = _store(client)
    spots = _load(store, rng, n)
    for step in range(4):
        searches = _searches(rng)
        _shortcuts(monkeypatch, False)
        plain = [
            _page(
                store.search(s["prefix"], filter=s["filter"], offset=s["offset"], limit=s["limit"])
            )
            for s in searches
        ]
        _shortcuts(monkeypatch, True)
        for _ in range(2):  # the second time, each query has its last window's edge to go by
            for s, want in zip(searches, plain):
                got = store.search(
                    s["prefix"], filter=s["filter"], offset=s["offset"], limit=s["limit"]
                )
                assert _page(got) == want, s
        _churn(store, client, rng, spots, step)  # the edges kept are now stale


def _script_queries(client: redis.Redis, prefix: str, run: Callable[[], object]) -> list[str]:
    """The FT.SEARCH commands scripts ran on this store's index while ``run()`` ran."""
    url = servers.redis_url(modules=True)
    marker = f"done-{prefix}"
    found: list[str] = []
    watcher = redis.Redis.from_url(url)
    try:
        with watcher.monitor() as monitor:
            run()
            other = redis.Redis.from_url(url)
            other.echo(marker)
            other.close()
            while marker not in (entry := monitor.next_command())["command"]:
                command = entry["command"]
                if entry["client_type"] == "lua" and command.startswith("FT.SEARCH"):
                    found.append(command)
    finally:
        watcher.close()
    return found


def test_a_repeated_search_reads_only_the_newest_range(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second search of a query runs, for each window it reads (a tie at the page's edge
    widens it), one FT.SEARCH within the range of the same window's last edge, and no query over
    every match; without the shortcuts the plain query runs."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = _store(client, prefix)
    _load(store, random.Random(3), 2000)
    _shortcuts(monkeypatch, True)

    def search() -> object:
        return store.search(("memories", "u0"), filter={"kind": "fact"}, limit=10)

    search()  # reads the index's size
    first = _script_queries(client, prefix, search)
    second = _script_queries(client, prefix, search)
    assert not any("@o:[" in q and "SORTBY u" in q for q in first)  # no edge known yet
    assert second and all("@o:[" in q and "SORTBY u DESC" in q for q in second)
    windows = {q.split(" LIMIT 0 ")[1].split()[0] for q in first if "SORTBY" in q}
    assert len(second) == len(windows)  # one query per window read
    _shortcuts(monkeypatch, False)
    plain = _script_queries(client, prefix, search)
    assert len(plain) == len(second)
    assert not any("@o:" in q or "WITHOUTCOUNT" in q for q in plain)


def test_the_optimizer_window_is_checked_and_kept(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first search over a prefix holding most of the index takes the optimizer's full window
    after counting the matches newer than its last row: no plain query."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = _store(client, prefix)
    store.batch([PutOp(("a", f"t{i % 4}"), f"k{i}", {"i": i}) for i in range(500)])
    for i in range(60):
        store.put(("a", "t0"), f"late{i}", {"i": i})  # distinct timestamps at the top
    _shortcuts(monkeypatch, True)
    store.search(("b",), limit=1)  # reads the index's size
    want = sorted((f"late{i}" for i in range(50, 60)), key=lambda k: -int(k[4:]))
    queries = _script_queries(client, prefix, lambda: store.search(("a",), limit=10))
    assert "WITHOUTCOUNT" in queries[0] and "LIMIT 0 1 " in queries[1] and len(queries) == 2
    assert [i.key for i in store.search(("a",), limit=10)] == want


def test_items_index_size_counts_only_a_built_index_with_o(client: redis.Redis) -> None:
    """``read_items_info`` keeps the size of an index that has ``o`` and is not scanning; an index
    without ``o`` (made before it) counts as 0, so no shortcut reads a missing field."""
    store = _store(client)
    store.batch([PutOp(("a",), f"k{i}", {"i": i}) for i in range(30)])
    for protocol in (2, 3):
        c = redis.Redis.from_url(servers.redis_url(modules=True), protocol=protocol)
        stats = RedisStats()
        read_items_info(stats, c.execute_command("FT.INFO", store.keys.index(None)))
        assert stats.items.count == 30
        old = f"old{uuid.uuid4().hex[:8]}"
        c.execute_command(*_without_o(_items_index(store), old))
        read_items_info(stats, c.execute_command("FT.INFO", old))
        assert stats.items.count == 0
        c.execute_command("FT.DROPINDEX", old)
        c.close()


def _items_index(store: RedisStore) -> list[Any]:
    return list(index_command(store.keys, None))  # type: ignore[arg-type]


def _without_o(command: list[Any], name: str) -> list[Any]:
    """An items-index FT.CREATE as made before ``o``, under another name."""
    at = command.index("o") - 2  # "u", "AS", "o", "NUMERIC"
    assert tuple(command[at : at + 4]) == SORTED_FIELD
    return [command[0], name, *command[2:at], *command[at + 4 :]]


def test_setup_adds_o_to_an_index_made_before_it(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An existing store's items index gets ``o`` from ``setup()`` (scanned in the background);
    once built, its searches take the shortcuts and answer the plain pages."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    store = _store(client, prefix)
    _load(store, random.Random(5), 600)
    index = store.keys.index(None)
    client.execute_command("FT.DROPINDEX", index)  # keeps the hashes
    client.execute_command(*_without_o(_items_index(store), index))
    _wait_built(client, index)
    _shortcuts(monkeypatch, False)
    want = _page(store.search(("memories", "u0"), filter={"kind": "fact"}, limit=10))
    again = _store(client, prefix)
    _wait_built(client, index)
    info = client.execute_command("FT.INFO", index)
    stats = RedisStats()
    read_items_info(stats, info)
    assert stats.items.count == 600
    _shortcuts(monkeypatch, True)
    for _ in range(3):
        assert _page(again.search(("memories", "u0"), filter={"kind": "fact"}, limit=10)) == want


def _wait_built(client: redis.Redis, index: str) -> None:
    def built() -> bool:
        info = client.execute_command("FT.INFO", index)
        if isinstance(info, list):
            info = dict(zip(info[::2], info[1::2]))
        return not int(info.get(b"indexing", info.get("indexing", 0)))

    wait_until(built, timeout=10, what="the index scan")


def test_a_guess_left_short_by_deletes_is_not_kept(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting most of the last window leaves fewer matches than a window within its edge: the
    search falls back (to the optimizer or the plain query) and still answers the plain page."""
    store = _store(client)
    for i in range(300):
        store.put(("p", f"t{i % 3}"), f"k{i}", {"kind": KINDS[i % 2], "i": i})
    _shortcuts(monkeypatch, True)

    def search() -> list[tuple[Any, ...]]:
        return _page(store.search(("p",), filter={"kind": "fact"}, limit=10))

    search()  # reads the index's size
    first = search()  # the window's edge is kept
    assert search() == first
    store.batch([PutOp(ns, key, None) for ns, key, *_ in first[:8]])
    _shortcuts(monkeypatch, False)
    want = search()
    assert len(want) == 10 and not {r[1] for r in want} & {r[1] for r in first[:8]}
    _shortcuts(monkeypatch, True)
    assert search() == want
    store.batch([PutOp(("p", "t9"), f"new{i}", {"kind": "fact", "i": i}) for i in range(3)])
    _shortcuts(monkeypatch, False)
    want = search()
    _shortcuts(monkeypatch, True)
    assert search() == want and {f"new{i}" for i in range(3)} <= {r[1] for r in want}


def test_a_hash_without_updated_at_breaks_no_shortcut(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hash under the store's prefix with tags but no ``u`` (not written by the store) sorts last
    in the plain query and has no sort key to be an edge: searches still answer the plain page."""
    store = _store(client)
    store.batch([PutOp(("a", f"t{i % 2}"), f"k{i}", {"i": i}) for i in range(12)])
    stray = store.keys.item("a.t0", "stray")
    tags = client.hget(store.keys.item("a.t0", "k0"), "p")
    client.hset(stray, mapping={"p": tags or b""})
    _shortcuts(monkeypatch, False)
    want = _page(store.search(("a",), limit=12))
    _shortcuts(monkeypatch, True)
    store.search(("b",), limit=1)  # reads the index's size
    for _ in range(3):
        assert _page(store.search(("a",), limit=12)) == want
    client.delete(stray)
