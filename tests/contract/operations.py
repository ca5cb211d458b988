"""Random store operations for the property tests (and the Redis Cluster's), and what a store's
result looks like in the reference model's shape (:mod:`tests.contract.model`)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, Op, PutOp, SearchOp

LABELS = ["a", "b", "a_b", "a-b", "%", "*", "x y", "ü", "\\", "{t}", "a|b"]
KEYS = ["k1", "k2", "k%", "k_", "K1"]

labels = st.sampled_from(LABELS)
sub_namespaces = st.lists(labels, min_size=1, max_size=3).map(tuple)
scalars = st.one_of(
    st.integers(-20, 20),
    st.sampled_from([2.5, -0.5, 1e3]),
    st.text("ab9Z", max_size=3),
    st.booleans(),
    st.none(),
)
values = st.fixed_dictionaries(
    {},
    optional={
        "n": scalars,
        "tag": st.sampled_from(["red", "blue", "Red"]),
        "nested": st.fixed_dictionaries({"m": st.integers(0, 5)}),
        "list": st.lists(st.integers(0, 3), max_size=2),
    },
)
operands = {
    "$eq": scalars,
    "$ne": scalars,
    "$gt": st.one_of(st.integers(-20, 20), st.text("ab9Z", max_size=2)),
    "$gte": st.integers(-20, 20),
    "$lt": st.one_of(st.integers(-20, 20), st.text("ab9Z", max_size=2)),
    "$lte": st.text("ab9Z", max_size=2),
    "$in": st.lists(scalars, max_size=3),
    "$nin": st.lists(scalars, max_size=3),
    "$exists": st.booleans(),
}
conditions = st.one_of(
    scalars,
    st.sampled_from(sorted(operands)).flatmap(lambda op: operands[op].map(lambda v: {op: v})),
)
filters = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["n", "tag", "nested.m", "list.0", "missing"]), conditions, max_size=2
    ),
)


def operations(root: str) -> st.SearchStrategy[Op]:
    """One random op under the namespace label ``root``: puts, deletes, gets, searches, listings."""
    ns = sub_namespaces.map(lambda s: (root, *s))
    patterns = st.lists(st.sampled_from([*LABELS[:4], "*"]), min_size=1, max_size=2).map(tuple)
    return st.one_of(
        st.builds(lambda n, k, v: PutOp(n, k, v), ns, st.sampled_from(KEYS), values),
        st.builds(lambda n, k, v: PutOp(n, k, v), ns, st.sampled_from(KEYS), values),
        st.builds(lambda n, k: PutOp(n, k, None), ns, st.sampled_from(KEYS)),
        st.builds(lambda n, k: GetOp(n, k), ns, st.sampled_from(KEYS)),
        st.builds(
            lambda p, f, limit, offset: SearchOp((root, *p), f, limit, offset),
            st.lists(labels, max_size=2).map(tuple),
            filters,
            st.integers(0, 6),
            st.integers(0, 3),
        ),
        st.builds(
            lambda pre, suf, depth, limit, offset: ListNamespacesOp(
                (
                    MatchCondition("prefix", (root, *pre)),
                    *([MatchCondition("suffix", suf)] if suf else []),
                ),
                depth,
                limit,
                offset,
            ),
            st.one_of(st.just(()), patterns),
            st.one_of(st.none(), patterns),
            st.one_of(st.none(), st.integers(1, 4)),
            st.integers(0, 8),
            st.integers(0, 2),
        ),
    )


def observe(result: Any) -> Any:
    """A store result in the model's shape."""
    if isinstance(result, list) and result and hasattr(result[0], "key"):
        return [(tuple(i.namespace), i.key, i.value) for i in result]
    if hasattr(result, "value"):
        return result.value
    return result


#: Settings of every property test: a few dozen sequences, no deadline (servers are shared).
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
