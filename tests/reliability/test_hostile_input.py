"""Hostile input, fuzzed: every request gets a clear error or correct behaviour, no data from another
namespace ever appears, and nothing already stored changes. A refusal must be this package's
``ValueError``/``TypeError``: any other exception (a driver's, langgraph's, a built-in) fails."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    BaseStore,
    PutOp,
    SearchOp,
)
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError

from langmem_adapters.errors import (
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidValueError,
    LangmemAdaptersError,
)
from tests.reliability.hostile import (
    HUGE,
    SENTINEL,
    indexed_astore,
    populated_store,
    store_state,
)
from tests.stores import AsyncStoreFactory, StoreFactory, ours_only

pytestmark = ours_only("InMemoryStore accepts any Python object and has no iter_items")

INJECTIONS = [
    "'; DROP TABLE langmem_store; --",
    "' OR '1'='1",
    "$1",
    "%s",
    "%(x)s",
    "@prefix:{*}",
    "*",
    "-@key:{x}",
    "{a|b}",
    "\\",
    "a:b",
    "\n",
    "\u202e",
    "x" * 5000,
    "ü🙂",
]

label = st.one_of(st.sampled_from(INJECTIONS), st.text(min_size=1, max_size=30)).filter(
    lambda s: "." not in s and "\x00" not in s
)
any_label = st.one_of(label, st.text(max_size=5))  # may be invalid ("", ".", NUL)
keys = st.one_of(st.sampled_from(INJECTIONS), st.text(max_size=40))

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.text(max_size=50),
        st.sampled_from(INJECTIONS),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
hostile_values = st.one_of(
    st.dictionaries(st.text(max_size=10), json_values, max_size=5),
    st.just({"nan": math.nan}),
    st.just({"inf": [1, math.inf]}),
    st.just({"set": {1, 2}}),
    st.just({"bytes": b"x"}),
    st.just({1: "int key"}),
    st.just({"huge": "x" * 200_000}),
)
operators = st.sampled_from(
    [
        "$eq",
        "$ne",
        "$gt",
        "$gte",
        "$lt",
        "$lte",
        "$in",
        "$nin",
        "$exists",
        "$regex",
        "$where",
        "$or",
        "'; DROP",
        "@key",
    ]
)
operands = st.one_of(json_values, st.just(math.nan), st.just({1, 2}), st.sampled_from(INJECTIONS))
filters = st.dictionaries(
    st.one_of(
        st.sampled_from(["a", "a.b", "$or", "x'y", "@prefix", "a..b", ""]),
        st.sampled_from(INJECTIONS),
    ),
    st.one_of(operands, st.dictionaries(operators, operands, max_size=2)),
    max_size=3,
)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _refused(exc: BaseException) -> None:
    """A refusal must be ours, a ValueError/TypeError, and say what is wrong."""
    ours = isinstance(exc, LangmemAdaptersError) and isinstance(exc, (ValueError, TypeError))
    assert ours and str(exc), f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:2000]


@contextmanager
def refused(match: str | None = None) -> Iterator[None]:
    """Expect a refusal of this package (see :func:`_refused`); a foreign exception propagates and
    fails the test."""
    with pytest.raises(LangmemAdaptersError, match=match) as info:
        yield
    _refused(info.value)


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


def _prepare(make_store: StoreFactory) -> BaseStore:
    store = make_store()
    store.put(SENTINEL, "secret", {"a": 1, "b": "x", "text": "secret"})
    return store


def test_hostile_puts(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store)

    @FUZZ
    @given(st.lists(any_label, min_size=1, max_size=3), keys, hostile_values)
    def run(labels: list[str], key: str, value: Any) -> None:
        ns = ("fuzz", *labels)
        before = store_state(store)
        try:
            store.put(ns, key, value)
        except Exception as exc:  # the point: only our refusals get out
            _refused(exc)
            assert store_state(store) == before
            return
        got = store.get(ns, key)
        assert got is not None and got.value == value and got.namespace == ns
        assert store.get(SENTINEL, "secret").value == {"a": 1, "b": "x", "text": "secret"}  # type: ignore[union-attr]
        assert all(i.namespace[0] == "fuzz" for i in store.search(("fuzz",), limit=1000))
        store.delete(ns, key)

    run()


def test_hostile_filters_and_namespaces_in_search(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store)
    store.put(("fuzz", "a"), "k", {"a": 1, "b": "x"})

    counts = st.one_of(st.integers(-2, 20), st.sampled_from(HUGE))

    @FUZZ
    @given(st.lists(any_label, max_size=2), filters, counts, st.one_of(st.integers(-2, 5), counts))
    def run(labels: list[str], flt: dict[str, Any], limit: int, offset: int) -> None:
        before = store_state(store)
        try:
            hits = store.search(("fuzz", *labels), filter=flt, limit=limit, offset=offset)
        except Exception as exc:  # the point: only our refusals get out
            _refused(exc)
        else:
            assert all(h.namespace[0] == "fuzz" for h in hits)
            assert len(hits) <= max(limit, 0)
        assert store_state(store) == before

    run()


def test_hostile_list_namespaces(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store)
    store.put(("fuzz", "a", "b"), "k", {"v": 1})

    @FUZZ
    @given(
        st.lists(any_label, max_size=3),
        st.lists(any_label, max_size=2),
        st.one_of(st.none(), st.integers(-1, 4)),
    )
    def run(prefix: list[str], suffix: list[str], depth: int | None) -> None:
        try:
            found = store.list_namespaces(
                prefix=("fuzz", *prefix), suffix=tuple(suffix) or None, max_depth=depth
            )
        except Exception as exc:  # the point: only our refusals get out
            _refused(exc)
        else:
            assert all(ns[0] == "fuzz" for ns in found)

    run()


def test_deep_and_huge_values(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store)
    store.put(("fuzz",), "deep", _nest(200))
    assert store.get(("fuzz",), "deep").value == _nest(200)  # type: ignore[union-attr]
    with refused("nested"):
        store.put(("fuzz",), "too-deep", _nest(5000))
    store.put(("fuzz",), "huge", {"s": "x" * 2_000_000})
    assert len(store.get(("fuzz",), "huge").value["s"]) == 2_000_000  # type: ignore[union-attr]
    with refused("NUL"):
        store.put(("fuzz",), "nul", {"s": "a\x00b"})
    with pytest.raises(InvalidNamespaceError):  # ours
        store.put(("fuzz", "a.b"), "k", {"v": 1})
    assert store.get(("fuzz",), "too-deep") is None and store.get(("fuzz",), "nul") is None


def test_numbers_beyond_64_bits_and_float_extremes_round_trip(
    make_store: StoreFactory, backend: str
) -> None:
    """The fast JSON reader declines these; the store must still read them back exactly."""
    store = _prepare(make_store)
    value = {
        "big": 2**70,
        "neg": -(2**65),
        "f": 1e300,
        "tiny": 5e-324,
        "list": [2**64, 0.1],
        "edges": [2**63 - 1, 2**63, -(2**63) - 1, 10**18, 2**53 + 1, 9.3e18, -1.5e19],
        "nested": {"deep": [{"n": 2**100}]},
    }
    store.put(("fuzz",), "numbers", value)
    got = store.get(("fuzz",), "numbers")
    assert got is not None and got.value == value
    assert isinstance(got.value["big"], int) and isinstance(got.value["f"], float)
    assert [type(x) for x in got.value["edges"]] == [int] * 5 + [float] * 2
    hits = store.search(("fuzz",), filter={"big": 2**70})
    assert [h.key for h in hits] == ["numbers"] and hits[0].value == value


def test_lone_surrogates_in_keys_and_labels_are_refused(
    make_store: StoreFactory, backend: str
) -> None:
    """No backend can store them (not valid UTF-8): a clear ValueError, and nothing written."""
    store = _prepare(make_store)
    with refused("surrogate"):
        store.put(("fuzz",), "bad\ud800key", {"v": 1})
    with refused("surrogate"):
        store.put(("fuzz", "bad\udfff"), "k", {"v": 1})
    with refused("surrogate"):
        store.search(("fuzz", "bad\udfff"))
    assert store.search(("fuzz",)) == [] and store.list_namespaces(prefix=("fuzz",)) == []


BAD_LABELS = [("fuzz", ""), ("fuzz", "a.b"), ("fuzz", "a\x00"), ("fuzz", 1), ("langgraph", "x")]
CONVENIENCE = [
    ("get", lambda ns: ((ns, "k"), {})),
    ("search", lambda ns: ((ns,), {})),
    ("put", lambda ns: ((ns, "k", {"v": 1}), {})),
    ("delete", lambda ns: ((ns, "k"), {})),
    ("list_namespaces", lambda ns: ((), {"prefix": ns[1:] or None, "suffix": ns})),
]


async def test_convenience_methods_raise_our_namespace_error(
    make_store: StoreFactory, make_astore: AsyncStoreFactory, backend: str
) -> None:
    """langgraph checks labels in ``get``/``search``/``put``/... before the store sees them; the
    refusal is still this package's error (``except LangmemAdaptersError`` catches it)."""
    store, astore = _prepare(make_store), await make_astore()
    for ns in BAD_LABELS:
        for method, args in CONVENIENCE:
            a, kw = args(ns)
            if method != "put" and ns[0] == "langgraph":
                continue  # only writes refuse a "langgraph" root
            with refused():
                getattr(store, method)(*a, **kw)
            with pytest.raises(LangGraphNamespaceError) as info:  # ours subclasses langgraph's
                await getattr(astore, "a" + method)(*a, **kw)
            assert isinstance(info.value, InvalidNamespaceError)


# --------------------------------------------------------------------------- deep and unstorable filters

DEEPEST = _nest(499)  # 500 levels: 501 under an item value's own, the most a put accepts
DEEPEST["f"] = [1.0, "t"]  # matched by an operand's [1, "t"]: 1 == 1.0 on every store
TOO_DEEP = [_nest(500), _nest(5000), {"$in": [_nest(600)]}, {"$ne": _nest(10_000)}, [[_nest(499)]]]
UNSTORABLE = [
    ("x\ud800", 1),
    ("x", "\udfff"),
    ("x", {"$in": ["a", "\ud800"]}),
    ("x", {"$gt": "\ud800"}),
    ("x", _nest(100) | {"s": "\ud800"}),
    ("x", {"k\ud800": 1}),
    ("x", [["a\x00b"]]),
    ("x", {"$nin": [{"k": "\x00"}]}),
]


def _filter_errors() -> list[tuple[dict[str, Any], str]]:
    """Filters no store can serve, each with the words its error must hold."""
    return (
        [({"x": v}, "nested") for v in TOO_DEEP]
        + [({k: v}, "surrogate|NUL") for k, v in UNSTORABLE]
        + [({"x": {1: "a"}}, "non-string object key")]
    )


def test_deep_and_unstorable_filters_raise_our_error(
    make_store: StoreFactory, backend: str
) -> None:
    """Any depth raises InvalidFilterError (not RecursionError), and so do lone surrogates anywhere
    (a driver error on PostgreSQL before); the deepest storable value is served on every store."""
    store = populated_store(make_store)
    store.put(("fuzz", "deep"), "d", {"x": DEEPEST, "text": "deep"})
    assert store.get(("fuzz", "deep"), "d").value == {"x": DEEPEST, "text": "deep"}  # type: ignore[union-attr]
    before = store_state(store)
    operand = _nest(499) | {"f": [1, "t"]}
    assert [h.key for h in store.search(("fuzz",), filter={"x": operand})] == ["d"]
    assert [h.key for h in store.search(("fuzz",), query="deep", filter={"x": operand})] == ["d"]
    assert store.count(("fuzz",), filter={"x": operand}) == 1  # type: ignore[attr-defined]
    assert store.search(("fuzz",), filter={"x": {"$in": [operand, 3]}})[0].key == "d"
    with pytest.raises(InvalidValueError, match="nested"):
        store.put(("fuzz", "deep"), "e", {"x": {"y": DEEPEST}})
    for flt, words in _filter_errors():
        for call in (
            partial(store.search, ("fuzz",), filter=flt),
            partial(store.search, (), query="deep", filter=flt, limit=2**70),
            partial(store.count, ("fuzz",), filter=flt),  # type: ignore[attr-defined]
            partial(store.batch, [PutOp(("fuzz",), "new", {"v": 1}), SearchOp((), flt)]),
        ):
            with pytest.raises(InvalidFilterError, match=f"filter.*({words})") as info:
                call()
            assert isinstance(info.value, ValueError)
    assert store_state(store) == before


async def test_deep_and_unstorable_filters_async(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await indexed_astore(make_astore)
    await store.aput(("fuzz",), "d", {"x": DEEPEST, "text": "deep"})
    operand = _nest(499) | {"f": [1, "t"]}
    assert [h.key for h in await store.asearch(("fuzz",), query="d", filter={"x": operand})] == [
        "d"
    ]
    for flt, words in _filter_errors():
        with pytest.raises(InvalidFilterError, match=f"filter.*({words})"):
            await store.asearch(("fuzz",), filter=flt)
        with pytest.raises(InvalidFilterError, match=f"filter.*({words})"):
            await store.acount(("fuzz",), filter=flt)  # type: ignore[attr-defined]
    assert [i.key for i in await store.asearch((), limit=10**20)] == ["d"]
