"""A seeded sweep of generated hostile operations (2,000 a store, 500 through the async API): every
call is served or raises one of this package's ``ValueError``/``TypeError`` errors, never a driver or
Python error; no result holds an item outside the searched prefix; nothing outside the sweep's
namespaces changes."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langmem_adapters import LangmemAdaptersError
from tests.reliability.hostile import SENTINEL, indexed_astore
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only

pytestmark = ours_only("InMemoryStore accepts any Python object and has no iter_items")

SECRET = {"text": "secret note 7", "kind": "fact", "n": 7}


def _nest(depth: int, leaf: Any = 1) -> Any:
    for _ in range(depth):
        leaf = {"n": leaf}
    return leaf


TEXT = [
    "",
    "note 7",
    "'; DROP TABLE langmem_store; --",
    "@p:{x} | -foo ~bar",
    "(a|b) * -c %d %s {x}",
    "\x00",
    "\ud800",
    "x" * 20_000,
    "ü🙂\u202e",
    "$1 ' OR '1'='1",
]
LABELS = ["a", "b", "ü", "*", "%s", "{a|b}", "@p:{x}", "'; --", "x" * 300, "", ".", "a.b", "\x00"]
LABELS += ["\ud800", "langgraph", " "]
_RNG = random.Random(3)
LONG = "".join(chr(0x4E00 + _RNG.randrange(20_000)) for _ in range(1000))  # 3,000 bytes of UTF-8
LABELS += [LONG[:500], LONG[:900]]  # incompressible: beyond PostgreSQL's index bound together
KEYS = ["k1", "k2", "", "\x00", "\ud800k", "'", "*", "x" * 2000, "a:b", LONG]
COUNTS: list[Any] = [0, 1, 3, 10, -1, -(2**70), 2**31, 2**40, 2**40 + 1, 2**63 - 1, 2**63, 2**64]
COUNTS += [10**30, 1_000_000, 1_000_001, 2_000_000, True, False, 1.5, "10", None, math.inf]
OPERANDS: list[Any] = [1, 7, "x", "fact", None, True, 1.5, 2**70, [1, [2]], {"a": {"b": 1}}, "\x00"]
OPERANDS += [_nest(600), _nest(3, "\ud800"), math.nan, {1, 2}, {1: "x"}, b"x", _nest(499), "@t:{x}"]
OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$in", "$nin", "$exists", "$regex", "$or", "@key"]
FIELDS: list[Any] = ["text", "kind", "n", "a.b", "x\ud800", "", "$or", "a..b", 1, "n.0"]
VALUES: list[Any] = [
    {"nan": math.nan},
    {1: "x"},
    {"deep": _nest(600)},
    {"deep": _nest(499)},
    {"s": "\ud800"},
    {"s": "a\x00"},
    "not a dict",
    {"set": {1}},
    {"big": 2**70, "f": 1e300},
]


class Sweep:
    """Random hostile calls, as (method, positional arguments, keyword arguments)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, pool: list[Any]) -> Any:
        return self.rng.choice(pool)

    def namespace(self, depth: int = 2) -> tuple[str, ...]:
        return ("fuzz", *(self.pick(LABELS) for _ in range(self.rng.randint(0, depth))))

    def filter(self) -> Any:
        if self.rng.random() < 0.1:
            return self.pick([None, "kind", ["kind"], {"$or": []}])
        flt: dict[Any, Any] = {}
        for _ in range(self.rng.randint(0, 2)):
            operand = self.pick(OPERANDS)
            if self.rng.random() < 0.5:
                operand = {self.pick(OPERATORS): self.pick([operand, [operand, 1], operand])}
            flt[self.pick(FIELDS)] = operand
        return flt

    def value(self) -> Any:
        if self.rng.random() < 0.3:
            return self.pick(VALUES)
        return {"text": self.pick(TEXT), "kind": self.pick(["fact", "x"]), "n": self.pick(COUNTS)}

    def op(self) -> Any:
        """A hand-built batch op."""
        kind = self.rng.randint(0, 3)
        if kind == 0:
            return GetOp(self.namespace(), self.pick(KEYS))
        if kind == 1:
            return PutOp(
                self.namespace(), self.pick(KEYS), self.value(), self.pick([None, ["text"]])
            )
        if kind == 2:
            query = self.pick([None, *TEXT, 5])
            count, offset = self.pick(COUNTS), self.pick(COUNTS)
            return SearchOp(self.namespace(), self.filter(), count, offset, query)
        conditions = tuple(
            MatchCondition(self.pick(["prefix", "suffix", "infix"]), self.namespace(1))
            for _ in range(self.rng.randint(0, 2))
        )
        return ListNamespacesOp(conditions, self.pick(COUNTS), self.pick(COUNTS), self.pick(COUNTS))

    def call(self) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
        kind = self.rng.randint(0, 8)
        if kind <= 1:
            ttl = {"ttl": self.pick([None, 0.5, 1e12, -1, math.nan, "5"])} if kind else {}
            return "put", (self.namespace(), self.pick(KEYS), self.value()), ttl
        if kind == 2:
            return "get", (self.namespace(), self.pick(KEYS)), {}
        if kind == 3:
            return "delete", (self.namespace(), self.pick(KEYS)), {}
        if kind == 4:
            query = self.pick([None, *TEXT])
            page = {"limit": self.pick(COUNTS), "offset": self.pick(COUNTS)}
            return "search", (self.namespace(),), {"query": query, "filter": self.filter(), **page}
        if kind == 5:
            page = {"limit": self.pick(COUNTS), "offset": self.pick(COUNTS)}
            depth = {"max_depth": self.pick(COUNTS)}
            return "list_namespaces", (), {"prefix": self.namespace(1), **depth, **page}
        if kind == 6:
            return "batch", ([self.op() for _ in range(self.rng.randint(1, 4))],), {}
        if kind == 7:
            return "count", (self.namespace(),), {"filter": self.filter()}
        return "iter_items", (self.namespace(1),), {"page_size": self.pick(COUNTS)}


def _under(found: Any, prefix: Any, wildcard: bool = False) -> bool:
    """Whether every result of a call under ``prefix`` (a namespace tuple) lies under it (with
    ``wildcard``, a ``"*"`` label of the prefix matches any label, as in ``list_namespaces``)."""
    if not isinstance(prefix, tuple):
        return True
    spaces: list[Any] = (
        [getattr(r, "namespace", r) for r in found] if isinstance(found, list) else []
    )
    return all(
        len(ns) >= len(prefix)
        and all(p == n or (wildcard and p == "*") for p, n in zip(prefix, ns))
        for ns in spaces
    )


def _check(method: str, args: tuple[Any, ...], kw: dict[str, Any], result: Any) -> None:
    """The result of a call that was served: within its prefix (and its page)."""
    if method in ("search", "iter_items"):
        assert _under(result, args[0]), (method, args, kw)
        limit = kw.get("limit")
        assert not isinstance(limit, int) or len(result) <= limit
    elif method == "list_namespaces":
        assert _under(result, kw["prefix"], wildcard=True)
    elif method == "batch":
        for op, got in zip(args[0], result):
            if isinstance(op, SearchOp):
                assert _under(got, op.namespace_prefix) and len(got) <= op.limit
            elif isinstance(op, ListNamespacesOp):
                assert len(got) <= op.limit
    elif method == "count":
        assert isinstance(result, int) and result >= 0


def _refused(exc: BaseException, call: Any) -> None:
    """A refusal must be ours and a ValueError/TypeError naming the problem."""
    ours = isinstance(exc, LangmemAdaptersError) and isinstance(exc, (ValueError, TypeError))
    assert ours and str(exc), f"{type(exc).__module__}.{type(exc).__name__}: {exc} from {call!r}"[
        :2000
    ]


def _outside(found: list[Any]) -> list[Any]:
    """Every item of a search over everything that lies outside the sweep's namespaces."""
    return [(i.namespace, i.key, i.value) for i in found if i.namespace[0] != "fuzz"]


@pytest.fixture(params=[False, True], ids=["vector", "hybrid"])
def hostile_store(
    make_store: StoreFactory, backend: str, request: pytest.FixtureRequest
) -> BaseStore:
    """An indexed store of the backend (with hybrid search, or vector only), holding the sentinel."""
    store = make_store(index=hash_index(fields=["text"], hybrid=request.param))
    store.put(SENTINEL, "secret", SECRET)
    return store


def test_generated_hostile_operations(hostile_store: BaseStore, backend: str) -> None:
    store, sweep = hostile_store, Sweep(16 + len(backend))
    outside = _outside(store.search((), limit=10**6))
    served = 0
    for _ in range(2000):
        method, args, kw = call = sweep.call()
        try:
            result = getattr(store, method)(*args, **kw)
            if method == "iter_items":
                result = list(result)
        except Exception as exc:  # the point: which exceptions get out
            _refused(exc, call)
            continue
        served += 1
        _check(method, args, kw, result)
    assert _outside(store.search((), limit=10**6)) == outside
    assert 300 < served < 1900  # the sweep exercises both outcomes


async def test_generated_hostile_operations_async(
    make_astore: AsyncStoreFactory, backend: str
) -> None:
    store = await indexed_astore(make_astore)
    await store.aput(SENTINEL, "secret", SECRET)
    outside = _outside(await store.asearch((), limit=10**6))
    sweep = Sweep(160 + len(backend))
    for _ in range(500):
        method, args, kw = call = sweep.call()
        try:
            if method == "iter_items":
                result = [i async for i in store.aiter_items(*args, **kw)]  # type: ignore[attr-defined]
            else:
                result = await getattr(store, "a" + method)(*args, **kw)
        except Exception as exc:
            _refused(exc, call)
            continue
        _check(method, args, kw, result)
    assert _outside(await store.asearch((), limit=10**6)) == outside
