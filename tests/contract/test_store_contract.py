"""The store contract every store of this package passes (sync API).

Parametrised over ``backend``; InMemoryStore runs the tests where langgraph's reference agrees
with our semantics; the others are marked ``ours_only`` (with the reason) and never run on it.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langmem_adapters.core.identity import PROBES
from langmem_adapters.embeddings import HashEmbeddings
from tests.stores import DIMS, StoreFactory, hash_index, ours_only
from tests.waiting import wait_until


def snapshot(store: BaseStore) -> list[tuple[tuple[str, ...], str, Any]]:
    """Every live item, for 'nothing changed' assertions."""
    items = store.search((), limit=10_000)
    return sorted((i.namespace, i.key, i.value) for i in items)


# ----------------------------------------------------------------------------- basics


def test_put_get_delete_roundtrip(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("users", "u1"), "k", {"a": 1, "nested": {"b": [1, 2, {"c": None}]}, "s": "ü\n"})
    item = store.get(("users", "u1"), "k")
    assert item is not None
    assert item.value == {"a": 1, "nested": {"b": [1, 2, {"c": None}]}, "s": "ü\n"}
    assert item.namespace == ("users", "u1") and item.key == "k"
    assert item.created_at.tzinfo is not None
    assert store.get(("users", "u1"), "other") is None
    assert store.get(("users",), "k") is None
    store.delete(("users", "u1"), "k")
    assert store.get(("users", "u1"), "k") is None
    store.delete(("users", "u1"), "never-existed")


@ours_only("InMemoryStore cannot hash list namespaces in put")
def test_namespaces_accept_lists(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    store.put(["a", "b"], "k", {"v": 1})  # type: ignore[arg-type]
    assert store.get(["a", "b"], "k") is not None  # type: ignore[arg-type]
    assert [i.key for i in store.search(["a"])] == ["k"]  # type: ignore[arg-type]
    assert store.list_namespaces(prefix=["a"]) == [("a", "b")]  # type: ignore[arg-type]


@ours_only("InMemoryStore resets created_at on every update")
def test_created_at_survives_update_updated_at_moves(
    make_store: StoreFactory, backend: str
) -> None:
    store = make_store()
    store.put(("t",), "k", {"v": 1})
    first = store.get(("t",), "k")
    time.sleep(0.01)
    store.put(("t",), "k", {"v": 2})
    second = store.get(("t",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


# ----------------------------------------------------------------------------- namespaces

ADVERSARIAL = [
    "john_doe",
    "john-doe",
    "john%doe",
    "john*",
    "*",
    "a\\b",
    "it's",
    'say "hi"',
    "two words",
    "ünï©ødé",
    "line\nbreak",
    "{tag}",
    "a|b",
    "a:b",
    "_",
    "%",
]


def test_labels_are_literal_and_exact(make_store: StoreFactory) -> None:
    store = make_store()
    for label in ADVERSARIAL:
        store.put(("users", label), "k", {"label": label})
    for label in ADVERSARIAL:
        item = store.get(("users", label), "k")
        assert item is not None and item.value == {"label": label}
        found = store.search(("users", label), limit=100)
        assert [i.value["label"] for i in found] == [label], label
    assert sorted(store.list_namespaces(prefix=("users",), limit=100)) == sorted(
        ("users", x) for x in ADVERSARIAL
    )


def test_prefix_matches_whole_labels(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("users", "john"), "a", {"v": 1})
    store.put(("users", "johnny"), "b", {"v": 2})
    store.put(("users", "john", "deep"), "c", {"v": 3})
    store.put(("usersx", "john"), "d", {"v": 4})
    assert sorted(i.key for i in store.search(("users", "john"))) == ["a", "c"]
    assert sorted(i.key for i in store.search(("users",))) == ["a", "b", "c"]
    assert sorted(i.key for i in store.search(())) == ["a", "b", "c", "d"]
    # Labels continuing "john" with characters that sort before "." and "/" are other namespaces.
    for i, tail in enumerate(["-x", " x", "!", ",", "+", "'", "\t"]):
        store.put(("users", "john" + tail), f"s{i}", {"v": 5})
    assert sorted(i.key for i in store.search(("users", "john"))) == ["a", "c"]
    assert store.list_namespaces(prefix=("users", "john")) == [
        ("users", "john"),
        ("users", "john", "deep"),
    ]


def test_trailing_newline_label_is_distinct(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("users", "alice"), "k", {"who": "alice"})
    store.put(("users", "alice\n"), "k", {"who": "alice-nl"})
    assert store.get(("users", "alice"), "k").value == {"who": "alice"}  # type: ignore[union-attr]
    assert store.get(("users", "alice\n"), "k").value == {"who": "alice-nl"}  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [("a.b",), ("",), ("a\x00",), (1,), ("ok", "")])
@ours_only("InMemoryStore does not validate ops passed to batch directly")
def test_invalid_namespace_rejected_everywhere(
    make_store: StoreFactory, backend: str, bad: tuple[Any, ...]
) -> None:
    store = make_store()
    store.put(("keep",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(bad, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(bad, "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(bad, "k")])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(bad)])
    assert snapshot(store) == [(("keep",), "k", {"v": 1})]


def test_langgraph_root_only_rejected_at_put(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    assert store.get(("langgraph", "x"), "k") is not None


def test_empty_namespace_put_rejected(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})


# ----------------------------------------------------------------------------- list_namespaces


def _populate_namespaces(store: BaseStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "x", "c"),
        ("b", "c"),
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
        ("users", "u2", "notes"),
    ]:
        store.put(ns, "k", {"v": 1})


def test_list_namespaces_conditions(make_store: StoreFactory) -> None:
    store = make_store()
    _populate_namespaces(store)
    assert store.list_namespaces(prefix=("a",)) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "x", "c"),
    ]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c"), ("b", "c")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(suffix=("*", "prefs")) == [
        ("users", "u1", "prefs"),
        ("users", "u2", "prefs"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "x"),
        ("b", "c"),
        ("users", "u1"),
        ("users", "u2"),
    ]
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]
    everything = store.list_namespaces(limit=100)
    assert store.list_namespaces(limit=3) == everything[:3]
    assert store.list_namespaces(limit=3, offset=3) == everything[3:6]
    assert store.list_namespaces(prefix=("nope",)) == []


def test_wildcard_is_exactly_one_label(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("a", "b", "c"), "k", {"v": 1})
    store.put(("a", "c"), "k", {"v": 1})
    store.put(("a", "*"), "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
    assert store.list_namespaces(prefix=("a", "*")) == [("a", "*"), ("a", "b", "c"), ("a", "c")]


@ours_only("InMemoryStore keeps listing namespaces whose items were deleted")
def test_list_namespaces_forgets_deleted(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    store.put(("gone", "x"), "k", {"v": 1})
    store.put(("stays",), "k", {"v": 1})
    store.delete(("gone", "x"), "k")
    assert store.list_namespaces() == [("stays",)]
    assert store.list_namespaces(max_depth=1) == [("stays",)]


# ----------------------------------------------------------------------------- filters


def _numbers(store: BaseStore) -> None:
    for i, v in enumerate([1, 2, 9, 10, 11, 100, "9", "10", "abc", None, True, 2.5]):
        store.put(("f",), f"k{i}", {"n": v, "i": i})
    store.put(("f",), "missing", {"i": 99})


def _keys(items: list[Any]) -> set[str]:
    return {i.key for i in items}


@ours_only("InMemoryStore raises TypeError when $gt meets a missing or non-numeric field")
def test_filters_are_typed(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    _numbers(store)
    s = lambda f: _keys(store.search(("f",), filter=f, limit=100))  # noqa: E731
    assert s({"n": {"$gt": 9}}) == {"k3", "k4", "k5"}
    assert s({"n": {"$gte": 9}}) == {"k2", "k3", "k4", "k5"}
    assert s({"n": {"$lt": 9}}) == {"k0", "k1", "k11"}
    assert s({"n": {"$lte": 2}}) == {"k0", "k1"}
    assert s({"n": {"$gt": "9"}}) == {"k8"}  # strings compare as strings: "abc" > "9"; "10" < "9"
    assert s({"n": {"$lt": "9"}}) == {"k7"}
    assert s({"n": 9}) == {"k2"}
    assert s({"n": {"$eq": 2.5}}) == {"k11"}
    assert s({"n": {"$eq": "9"}}) == {"k6"}
    assert s({"n": {"$eq": True}}) == {"k10"}
    assert s({"n": {"$eq": 1}}) == {"k0"}  # True is not 1
    assert s({"n": None}) == {"k9"}
    assert s({"n": {"$ne": 9}}) == {f"k{i}" for i in range(12) if i != 2} | {"missing"}
    assert s({"n": {"$gt": 1, "$lt": 11}}) == {"k1", "k2", "k3", "k11"}


@ours_only("InMemoryStore has no $in/$nin/$exists or dotted paths")
def test_filter_extensions(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    store.put(
        ("f",), "a", {"meta": {"lang": "en", "score": 5}, "tags": ["x", "y"], "list": [{"n": 1}]}
    )
    store.put(("f",), "b", {"meta": {"lang": "fr", "score": 50}, "tags": ["y"]})
    store.put(("f",), "c", {"other": 1})
    s = lambda f: _keys(store.search(("f",), filter=f, limit=100))  # noqa: E731
    assert s({"meta.lang": "en"}) == {"a"}
    assert s({"meta.score": {"$gt": 10}}) == {"b"}
    assert s({"meta.lang": {"$in": ["en", "de"]}}) == {"a"}
    assert s({"meta.lang": {"$nin": ["en"]}}) == {"b", "c"}
    assert s({"meta": {"$exists": True}}) == {"a", "b"}
    assert s({"meta.lang": {"$exists": False}}) == {"c"}
    assert s({"tags": ["y"]}) == {"b"}  # whole-value equality for lists
    assert s({"meta": {"lang": "fr", "score": 50}}) == {"b"}  # whole-value equality for objects
    assert s({"list.0.n": 1}) == {"a"}
    assert s({"meta.lang": "en", "other": 1}) == set()


@pytest.mark.parametrize(
    "bad",
    [
        {"n": {"$regex": "x"}},
        {"$or": [{"a": 1}]},
        {"n": {"$gt": [1]}},
        {"n": {"$gt": None}},
        {"n": {"$in": "abc"}},
        {"n": {"$exists": "yes"}},
        {"": 1},
        {"a..b": 1},
        {"n": {"$gt": float("nan")}},
    ],
)
@ours_only("InMemoryStore accepts some malformed filters")
def test_bad_filters_raise_clear_errors(
    make_store: StoreFactory, backend: str, bad: dict[str, Any]
) -> None:
    store = make_store()
    store.put(("f",), "a", {"n": 1})
    with pytest.raises(ValueError):
        store.search(("f",), filter=bad)


def test_filter_runs_before_limit_and_offset(make_store: StoreFactory) -> None:
    store = make_store()
    for i in range(40):
        store.put(("p",), f"k{i:02d}", {"even": i % 2 == 0, "i": i})
    page1 = store.search(("p",), filter={"even": True}, limit=15)
    page2 = store.search(("p",), filter={"even": True}, limit=15, offset=15)
    assert len(page1) == 15 and len(page2) == 5
    assert _keys(page1) | _keys(page2) == {f"k{i:02d}" for i in range(0, 40, 2)}
    assert not _keys(page1) & _keys(page2)


@ours_only("InMemoryStore returns insertion order")
def test_search_without_query_is_newest_first(make_store: StoreFactory, backend: str) -> None:
    store = make_store()
    for k in ["a", "b", "c"]:
        store.put(("o",), k, {"v": k})
        time.sleep(0.002)
    store.put(("o",), "a", {"v": "a2"})
    assert [i.key for i in store.search(("o",))] == ["a", "c", "b"]
    assert all(i.score is None for i in store.search(("o",)))


@ours_only("InMemoryStore returns insertion order")
def test_pages_through_ties_are_complete_and_ordered(
    make_store: StoreFactory, backend: str
) -> None:
    """Items of one batch share updated_at: pages cut through such ties anywhere and still list
    every match once, newest batch first, then by namespace and key."""
    store = make_store()
    for b in range(3):
        store.batch(
            [
                PutOp(("t", ns), f"b{b}k{i:02d}", {"kind": "a" if i % 3 else "b"})
                for ns in ("y", "x")
                for i in range(9)
            ]
        )
        time.sleep(0.002)
    newest_first = [
        (("t", ns), f"b{b}k{i:02d}") for b in (2, 1, 0) for ns in ("x", "y") for i in range(9)
    ]
    for flt, want in (
        (None, newest_first),
        ({"kind": "a"}, [x for x in newest_first if int(x[1][-2:]) % 3]),
    ):
        for size in (1, 4, 7, 10):
            got = [
                (tuple(r.namespace), r.key)
                for offset in range(0, len(want) + size, size)
                for r in store.search(("t",), filter=flt, limit=size, offset=offset)
            ]
            assert got == want, (flt, size)


@pytest.mark.parametrize("kw", [{"limit": -1}, {"offset": -1}])
@ours_only("InMemoryStore silently accepts negative limit/offset")
def test_negative_paging_rejected(
    make_store: StoreFactory, backend: str, kw: dict[str, int]
) -> None:
    store = make_store()
    with pytest.raises(ValueError):
        store.search(("a",), **kw)
    with pytest.raises(ValueError):
        store.list_namespaces(**kw)


# ----------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("value", "exc"),
    [
        ({"x": float("nan")}, ValueError),
        ({"x": float("inf")}, ValueError),
        ({"x": {1, 2}}, TypeError),
        ({"x": object()}, TypeError),
        ({1: "int key"}, TypeError),
        ("not a dict", TypeError),
    ],
)
@ours_only("InMemoryStore stores any Python object")
def test_bad_values_raise_and_write_nothing(
    make_store: StoreFactory, backend: str, value: Any, exc: type
) -> None:
    store = make_store()
    store.put(("v",), "keep", {"ok": True})
    with pytest.raises(exc):
        store.put(("v",), "bad", value)
    with pytest.raises(exc):
        store.batch([PutOp(("v",), "ok2", {"fine": 1}), PutOp(("v",), "bad", value)])
    assert snapshot(store) == [(("v",), "keep", {"ok": True})]


# ----------------------------------------------------------------------------- batches


def test_batch_reads_see_state_before_writes(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("b",), "old", {"v": 1})
    results = store.batch(
        [
            PutOp(("b",), "new", {"v": 2}),
            GetOp(("b",), "new"),
            GetOp(("b",), "old"),
            PutOp(("b",), "old", None),
            SearchOp(("b",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
        ]
    )
    assert results[0] is None and results[1] is None
    assert results[2] is not None and results[2].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[4]] == ["old"]  # type: ignore[union-attr]
    assert results[5] == [("b",)]
    assert store.get(("b",), "new") is not None and store.get(("b",), "old") is None


def test_batch_last_write_wins(make_store: StoreFactory) -> None:
    store = make_store()
    store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            PutOp(("b",), "k", {"v": 2}),
            PutOp(("b",), "j", {"v": 3}),
            PutOp(("b",), "j", None),
        ]
    )
    assert store.get(("b",), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("b",), "j") is None


# ----------------------------------------------------------------------------- vectors


class CountingEmbeddings(Embeddings):
    """HashEmbeddings that records every document and query text it embeds."""

    def __init__(self, dims: int = DIMS) -> None:
        self.inner = HashEmbeddings(dims)
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        # The identity probe (once per store instance, see core/identity.py) is not item text.
        self.documents += [t for t in texts if t not in PROBES]
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.inner.embed_query(text)


def test_vector_search_ranks_by_similarity(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    store.put(("docs",), "pizza", {"text": "I love pizza with cheese"})
    store.put(("docs",), "cats", {"text": "cats sleep all day"})
    store.put(("docs",), "code", {"text": "python code compiles"})
    store.put(("other",), "pizza2", {"text": "I love pizza with cheese"})
    results = store.search(("docs",), query="pizza cheese")
    assert results[0].key == "pizza"
    assert results[0].score is not None and results[0].score > results[1].score  # type: ignore[operator]
    assert {r.key for r in results} == {"pizza", "cats", "code"}


@ours_only("InMemoryStore re-embeds on every put")
def test_query_uses_embed_query_and_unchanged_text_is_not_reembedded(
    make_store: StoreFactory, backend: str
) -> None:
    emb = CountingEmbeddings()
    store = make_store(index={"dims": DIMS, "embed": emb, "fields": ["text", "title"]})
    store.put(("d",), "k", {"text": "alpha beta", "title": "first"})
    assert sorted(emb.documents) == ["alpha beta", "first"]
    store.put(("d",), "k", {"text": "alpha beta", "title": "second", "other": 1})
    assert sorted(emb.documents) == ["alpha beta", "first", "second"]
    store.search(("d",), query="alpha")
    assert emb.queries == ["alpha"]


@ours_only("InMemoryStore keeps stale vectors (langgraph#8214)")
def test_update_replaces_vectors(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    store.put(("d",), "k", {"text": "zebra stripes savanna"})
    store.put(("d",), "filler", {"text": "unrelated words here"})
    store.put(("d",), "k", {"text": "quantum physics lecture"})
    top = store.search(("d",), query="zebra stripes savanna", limit=1)[0]
    assert top.key != "k" or (top.score is not None and top.score < 0.5)
    store.put(("d",), "k", {"text": "zebra stripes savanna"}, index=False)
    # Without vectors it is no longer a match: it follows the scored items, unscored.
    hits = store.search(("d",), query="zebra stripes savanna")
    assert [(h.key, h.score is None) for h in hits] == [("filler", False), ("k", True)]
    assert store.get(("d",), "k") is not None


def test_array_fields_and_per_put_index(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=hash_index(fields=["title"]))
    store.put(
        ("d",),
        "arr",
        {"title": "nothing", "notes": ["volcano eruption", "ocean tides"]},
        index=["notes[*]"],
    )
    store.put(("d",), "plain", {"title": "volcano", "notes": []})
    store.put(("d",), "other", {"title": "something else entirely"})
    hits = store.search(("d",), query="ocean tides", limit=3)
    assert hits[0].key == "arr"
    hits = store.search(("d",), query="volcano eruption", limit=3)
    assert hits[0].key == "arr"
    assert len({h.key for h in hits}) == len(hits)  # one result per item, however many vectors


@pytest.mark.parametrize("distance", ["cosine", "l2", "inner_product"])
@ours_only("InMemoryStore only scores cosine")
def test_scores_per_distance(make_store: StoreFactory, backend: str, distance: str) -> None:
    store = make_store(index=hash_index(fields=["text"], distance_type=distance))
    emb = HashEmbeddings(DIMS)
    store.put(("s",), "a", {"text": "red apple"})
    store.put(("s",), "b", {"text": "green car"})
    (q,) = emb.embed_documents(["red apple pie"])
    a, b = emb.embed_documents(["red apple", "green car"])
    expected = {
        "cosine": lambda v: sum(x * y for x, y in zip(q, v)),  # unit vectors
        "inner_product": lambda v: sum(x * y for x, y in zip(q, v)),
        "l2": lambda v: -math.dist(q, v),
    }[distance]
    results = {r.key: r.score for r in store.search(("s",), query="red apple pie")}
    assert results["a"] == pytest.approx(expected(a), abs=1e-4)
    assert results["b"] == pytest.approx(expected(b), abs=1e-4)


@ours_only("reference semantics")
def test_vector_paging_is_complete(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    store.batch(
        [
            PutOp(("p",), f"k{i}", {"text": f"item number {i} word{i % 7}", "i": i})
            for i in range(57)
        ]
    )
    seen: list[str] = []
    for offset in range(0, 57, 10):
        page = store.search(("p",), query="item word3", limit=10, offset=offset)
        assert len(page) == min(10, 57 - offset)
        seen += [r.key for r in page]
    assert sorted(seen) == sorted(f"k{i}" for i in range(57))
    scores = [r.score for r in store.search(("p",), query="item word3", limit=57)]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_selective_filter_still_fills_limit(make_store: StoreFactory, backend: str) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    store.batch(
        [
            PutOp(("s", "big"), f"k{i}", {"text": f"common words {i}", "rare": i % 50 == 0})
            for i in range(300)
        ]
    )
    store.batch(
        [
            PutOp(("s", "tiny"), f"t{i}", {"text": f"other words {i}", "rare": False})
            for i in range(4)
        ]
    )
    hits = store.search(("s",), query="common words", filter={"rare": True}, limit=10)
    assert sorted(h.key for h in hits) == sorted(f"k{i}" for i in range(0, 300, 50))
    assert len(store.search(("s", "tiny"), query="common words", limit=10)) == 4


@ours_only("InMemoryStore does not check dimensions")
def test_wrong_embedding_dimension_raises_and_writes_nothing(
    make_store: StoreFactory, backend: str
) -> None:
    store = make_store(index={"dims": DIMS, "embed": HashEmbeddings(DIMS + 3), "fields": ["text"]})
    with pytest.raises(ValueError):
        store.put(("d",), "k", {"text": "hello"})
    assert store.get(("d",), "k") is None


def test_search_without_index_or_with_empty_query(make_store: StoreFactory) -> None:
    store = make_store()
    store.put(("d",), "k", {"text": "hello"})
    assert [r.key for r in store.search(("d",), query="hello")] == ["k"]
    store2 = make_store(index=hash_index(fields=["text"]))
    store2.put(("e",), "k", {"text": "hello"})
    assert [r.key for r in store2.search(("e",), query="")] == ["k"]


# ----------------------------------------------------------------------------- TTL


@ours_only("InMemoryStore has no TTL")
def test_expired_items_are_never_returned(make_store: StoreFactory) -> None:
    store = make_store(ttl={"default_ttl": 0.02, "refresh_on_read": False})
    store.put(("t", "x"), "short", {"v": 1})
    store.put(("t", "y"), "long", {"v": 2}, ttl=10)
    assert store.get(("t", "x"), "short") is not None
    time.sleep(1.6)
    assert store.get(("t", "x"), "short") is None
    assert _keys(store.search(("t",))) == {"long"}
    assert store.list_namespaces() == [("t", "y")]
    assert store.sweep_ttl() >= 1  # type: ignore[attr-defined]
    assert store.list_namespaces() == [("t", "y")]


@ours_only("InMemoryStore has no TTL")
def test_refresh_on_read_uses_items_own_ttl(make_store: StoreFactory) -> None:
    store = make_store(ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "k", {"v": 1}, ttl=0.03)  # 1.8 s
    for _ in range(3):
        time.sleep(0.8)
        assert store.get(("t",), "k") is not None  # each read extends by 1.8 s, not by default_ttl
    assert store.search(("t",), refresh_ttl=False)
    time.sleep(2.2)
    assert store.get(("t",), "k", refresh_ttl=False) is None


@ours_only("InMemoryStore has no TTL")
def test_put_over_expired_item_is_a_create(make_store: StoreFactory) -> None:
    store = make_store(ttl={"default_ttl": 10})
    store.put(("t",), "k", {"v": 1}, ttl=0.01)
    first = store.get(("t",), "k")
    time.sleep(0.8)
    store.put(("t",), "k", {"v": 2})
    second = store.get(("t",), "k")
    assert first is not None and second is not None and second.created_at > first.created_at


@ours_only("InMemoryStore has no TTL")
def test_bad_ttl_rejected(make_store: StoreFactory) -> None:
    store = make_store(ttl={"default_ttl": 10})
    for bad in (-1, 0, float("nan")):
        with pytest.raises(ValueError):
            store.put(("t",), "k", {"v": 1}, ttl=bad)
    assert store.get(("t",), "k") is None


@ours_only("InMemoryStore has no TTL")
def test_sweeper_starts_and_stops(
    make_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="langmem_adapters")
    store: Any = make_store(ttl={"default_ttl": 0.01, "sweep_interval_minutes": 0.01})
    store.put(("t",), "k", {"v": 1})
    store.start_ttl_sweeper()
    wait_until(lambda: "TTL sweep removed 1 items" in caplog.text, what="a sweep removing it")
    assert store.stop_ttl_sweeper(timeout=5)
    assert store.get(("t",), "k") is None


# ----------------------------------------------------------------------------- atomic create


@ours_only("InMemoryStore has no put_if_absent")
def test_put_if_absent_single_winner(make_store: StoreFactory, backend: str) -> None:
    store: Any = make_store()
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def racer(i: int) -> None:
        barrier.wait()
        if store.put_if_absent(("race",), "k", {"winner": i}):
            wins.append(i)

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert store.get(("race",), "k").value == {"winner": wins[0]}
    assert store.put_if_absent(("race",), "k", {"winner": -1}) is False


@ours_only("InMemoryStore has no TTL")
def test_put_if_absent_treats_expired_as_absent(make_store: StoreFactory) -> None:
    store: Any = make_store(ttl={"default_ttl": 10})
    assert store.put_if_absent(("t",), "k", {"v": 1}, ttl=0.01)
    time.sleep(0.8)
    assert store.put_if_absent(("t",), "k", {"v": 2})
    assert store.get(("t",), "k").value == {"v": 2}
    with pytest.raises(InvalidNamespaceError):
        store.put_if_absent(("a.b",), "k", {"v": 1})


def test_backslash_text_that_looks_like_an_escape_roundtrips(make_store: StoreFactory) -> None:
    store = make_store()
    value = {"s": "literal \\u0000 and \\\\u0000 text", "\\u0000key": ["\\"]}
    store.put(("esc",), "k", value)
    assert store.get(("esc",), "k").value == value  # type: ignore[union-attr]
    assert [i.key for i in store.search(("esc",), filter={"s": value["s"]})] == ["k"]


def test_vector_search_in_a_writing_batch_sees_the_state_before_it(
    make_store: StoreFactory,
) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    store.batch(
        [PutOp(("s",), f"k{i}", {"text": f"common words {i}", "rare": False}) for i in range(30)]
    )
    put = PutOp(("s",), "new", {"text": "common words", "rare": True})
    search = SearchOp(("s",), {"rare": True}, 10, 0, "common words")
    _, hits = store.batch([put, search])
    assert hits == []  # the filter is selective, so a fallback query runs: still before the put
    assert [h.key for h in store.search(("s",), query="common words", filter={"rare": True})] == [
        "new"
    ]
