"""Hostile input, fuzzed: every request gets a clear error or correct behaviour, no data from another
namespace ever appears, and nothing already stored changes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, InvalidNamespaceError

from tests.conftest import StoreFactory

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
SENTINEL = ("victim", "tenant")


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"n": value}
    return value


def _state(store: BaseStore) -> list[tuple[Any, ...]]:
    return sorted((i.namespace, i.key, repr(i.value)) for i in store.search((), limit=100_000))


def _prepare(make_store: StoreFactory, backend: str) -> BaseStore:
    if backend == "memory":
        pytest.skip("InMemoryStore accepts any Python object")
    store = make_store()
    store.put(SENTINEL, "secret", {"a": 1, "b": "x", "text": "secret"})
    return store


def test_hostile_puts(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store, backend)

    @FUZZ
    @given(st.lists(any_label, min_size=1, max_size=3), keys, hostile_values)
    def run(labels: list[str], key: str, value: Any) -> None:
        ns = ("fuzz", *labels)
        before = _state(store)
        try:
            store.put(ns, key, value)
        except (ValueError, TypeError) as exc:
            assert str(exc), "errors must say what is wrong"
            assert _state(store) == before
            return
        got = store.get(ns, key)
        assert got is not None and got.value == value and got.namespace == ns
        assert store.get(SENTINEL, "secret").value == {"a": 1, "b": "x", "text": "secret"}  # type: ignore[union-attr]
        assert all(i.namespace[0] == "fuzz" for i in store.search(("fuzz",), limit=1000))
        store.delete(ns, key)

    run()


def test_hostile_filters_and_namespaces_in_search(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store, backend)
    store.put(("fuzz", "a"), "k", {"a": 1, "b": "x"})

    @FUZZ
    @given(st.lists(any_label, max_size=2), filters, st.integers(-2, 20), st.integers(-2, 5))
    def run(labels: list[str], flt: dict[str, Any], limit: int, offset: int) -> None:
        before = _state(store)
        try:
            hits = store.search(("fuzz", *labels), filter=flt, limit=limit, offset=offset)
        except (ValueError, TypeError) as exc:
            assert str(exc)
        else:
            assert all(h.namespace[0] == "fuzz" for h in hits)
            assert len(hits) <= max(limit, 0)
        assert _state(store) == before

    run()


def test_hostile_list_namespaces(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store, backend)
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
        except (ValueError, TypeError) as exc:
            assert str(exc)
        else:
            assert all(ns[0] == "fuzz" for ns in found)

    run()


def test_deep_and_huge_values(make_store: StoreFactory, backend: str) -> None:
    store = _prepare(make_store, backend)
    store.put(("fuzz",), "deep", _nest(200))
    assert store.get(("fuzz",), "deep").value == _nest(200)  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.put(("fuzz",), "too-deep", _nest(5000))
    store.put(("fuzz",), "huge", {"s": "x" * 2_000_000})
    assert len(store.get(("fuzz",), "huge").value["s"]) == 2_000_000  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.put(("fuzz",), "nul", {"s": "a\x00b"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("fuzz", "a.b"), "k", {"v": 1})
    assert store.get(("fuzz",), "too-deep") is None and store.get(("fuzz",), "nul") is None


def test_numbers_beyond_64_bits_and_float_extremes_round_trip(
    make_store: StoreFactory, backend: str
) -> None:
    """The fast JSON reader declines these; the store must still read them back exactly."""
    store = _prepare(make_store, backend)
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
    store = _prepare(make_store, backend)
    with pytest.raises(ValueError, match="surrogate"):
        store.put(("fuzz",), "bad\ud800key", {"v": 1})
    with pytest.raises(ValueError, match="surrogate"):
        store.put(("fuzz", "bad\udfff"), "k", {"v": 1})
    with pytest.raises(ValueError, match="surrogate"):
        store.search(("fuzz", "bad\udfff"))
    assert store.search(("fuzz",)) == [] and store.list_namespaces(prefix=("fuzz",)) == []
