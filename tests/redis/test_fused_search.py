"""The one-script hybrid search (``redis/fused.py``, ``lua/fused.lua``) gives the page of the
two-script way (both sides sent, fused in Python by ``core.information``), key for key and score
for score, where ties decide: items sharing a text and a vector across namespaces and keys that
byte order sorts unlike a language's collation, a tie of IDF sums that the candidates' cut runs
through, pages past the first, a namespace whose scored items run short of the page, and a
window whose last row ties with the page's last (then the script declines and both sides are
asked again). The two-script way is what a range filter takes (checked on the rows, every item
passing it), so both run on one store."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.redis import RedisStore
from langmem_adapters.redis.fused import Fused, FusedPage
from tests import servers
from tests.information import DIMS, Angles, Memory

#: Every item passes it; a range is checked on the rows, so the search takes the two-script way.
PASSES = {"n": {"$gte": 0}}
#: Byte order puts "T" < "t" < "u" < "z" < "ä" < "é" < "ü"; a language's collation does not.
KEYS = ["t", "T", "é", "z", "ä", "u", "ü", "tt", "t2", "Z"]
NAMESPACES = [("s", "u1"), ("s", "U1"), ("s", "ü"), ("s", "u1", "x"), ("s", "u-1")]


def memories() -> list[Memory]:
    """Twins of one text and angle under every namespace and key (nats ties, met on the lexical
    side past the vector page); 30 holders of "kiwi" alone at a few angles (one IDF sum: the
    cut of the 20 candidates wanted runs through it); near items without query words (the
    vector page); far fillers holding "apple"."""
    out = [Memory(ns, k, "kiwi plum", 60) for ns in NAMESPACES for k in KEYS[:4]]
    out += [Memory(NAMESPACES[i % 5], f"k{i}", f"kiwi {i}", 20 + 10 * (i % 3)) for i in range(30)]
    out += [Memory(("s", "u1"), f"v{i}", f"nothing {i}", 1 + i) for i in range(12)]
    out += [Memory(("s", "u2"), f"f{i}", f"apple filler {i}", 95 + i) for i in range(40)]
    return out


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(servers.redis_url(modules=True))
    yield c
    c.close()


def loaded(
    client: redis.Redis,
    items: list[Memory],
    unindexed: int = 0,
    *,
    distance: str = "cosine",
    hybrid: dict[str, float] | None = None,
) -> RedisStore:
    """A hybrid Query Engine store of ``items`` (and ``unindexed`` items without vectors or
    words, under ("s", "small")), exact (flat) vectors, the information fusion (``hybrid``: more
    of its options)."""
    index = {
        "dims": DIMS,
        "embed": Angles(items),
        "fields": ["text"],
        "distance_type": distance,
        "ann_index_config": {"kind": "flat"},
        "hybrid": {"fusion": "information", "rare_share": 0.5, **(hybrid or {})},
    }
    prefix = f"fus{uuid.uuid4().hex[:10]}"
    store = RedisStore(client, prefix=prefix, mode="query_engine", index=index)  # type: ignore[arg-type]
    store.setup()
    ops = [PutOp(m.namespace, m.key, {"text": m.text, "n": i}) for i, m in enumerate(items)]
    ops += [
        PutOp(("s", "small"), f"w{i}", {"text": "kiwi", "n": i}, index=False)
        for i in range(unindexed)
    ]
    store.batch(ops)
    return store


@pytest.fixture
def fused_pages(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each search the script served fused (True) or declined (False)."""
    seen: list[bool] = []
    page = Fused.page

    def spy(self: Fused, reply: object) -> FusedPage | None:
        got = page(self, reply)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(Fused, "page", spy)
    return seen


def same_pages(store: RedisStore, prefix: tuple[str, ...], query: str) -> None:
    for offset, limit in ((0, 1), (0, 5), (3, 4), (0, 10), (7, 3), (0, 30)):
        one = store.search(prefix, query=query, offset=offset, limit=limit)
        two = store.search(prefix, query=query, filter=PASSES, offset=offset, limit=limit)
        assert [(r.namespace, r.key) for r in one] == [(r.namespace, r.key) for r in two]
        assert [r.score for r in one] == pytest.approx([r.score for r in two], abs=1e-12)
        assert [r.value for r in one] == [r.value for r in two]


@pytest.mark.parametrize("prefix", [("s",), ("s", "u1"), ()])
def test_one_script_gives_the_two_script_page(
    client: redis.Redis, fused_pages: list[bool], prefix: tuple[str, ...]
) -> None:
    """("s",) holds the whole index, so the window's query leaves it out and the script checks
    it on the rows; ("s", "u1") is a namespace among others; () is global."""
    store = loaded(client, memories())
    for query in ("kiwi plum", "kiwi apple", "kiwi", "plum nothing 3"):
        fused_pages.clear()
        same_pages(store, prefix, query)
        assert fused_pages and all(fused_pages)  # the script served every unfiltered search


@pytest.mark.parametrize(
    ("distance", "hybrid"),
    [
        ("l2", {}),
        ("inner_product", {}),
        ("cosine", {"vector_weight": 0.0}),
        ("cosine", {"lexical_weight": 0.0}),
        ("cosine", {"floor": 0.6, "depth": 2, "vector_weight": 0.5}),
    ],
)
def test_other_distances_and_options(
    client: redis.Redis, fused_pages: list[bool], distance: str, hybrid: dict[str, float]
) -> None:
    """The server's l2 and inner-product distances rank as Python ranks them (after its square
    root and shift); a side weighted 0 drops out; the floor and a shallower lexical side cut the
    candidates."""
    store = loaded(client, memories(), distance=distance, hybrid=hybrid)
    for query in ("kiwi plum", "kiwi apple"):
        same_pages(store, ("s",), query)
    assert fused_pages and all(fused_pages)


def test_scored_items_running_short(client: redis.Redis, fused_pages: list[bool]) -> None:
    """Three scored items and four without vectors under one namespace: the page goes on with
    the newest of those, as the vector search's does."""
    items = [Memory(("s", "small"), f"m{i}", f"kiwi note {i}", 10 * i) for i in range(3)]
    store = loaded(client, items + memories(), unindexed=4)
    same_pages(store, ("s", "small"), "kiwi note")
    got = store.search(("s", "small"), query="kiwi note", limit=10)
    assert len(got) == 7
    assert {r.key for r in got[3:]} == {f"w{i}" for i in range(4)}
    assert fused_pages and all(fused_pages)


def test_a_window_tied_at_its_edge_is_asked_again(
    client: redis.Redis, fused_pages: list[bool]
) -> None:
    """Thirty twins (one text, one vector): the window's last row ties with the page's last, so
    the script declines and both sides are asked again, wider; the page is still exact."""
    twins = [Memory(("s", "t"), f"x{i:02d}", "kiwi twin", 30) for i in range(30)]
    store = loaded(client, twins + memories()[-40:])
    same_pages(store, ("s", "t"), "kiwi twin")
    # windows of 20 rows decline (pages ending at 1 to 10); the page of 30 asks 60 rows, more
    # than the twins, so its window is complete and the script serves it
    assert fused_pages == [False] * 5 + [True]
    got = store.search(("s", "t"), query="kiwi twin", limit=5)
    assert [r.key for r in got] == [f"x{i:02d}" for i in range(5)]  # ties by namespace and key
