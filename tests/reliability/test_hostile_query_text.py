"""Hostile query text on hybrid stores (``index={"hybrid": True}``): SQL, RediSearch and tsquery syntax,
quotes, wildcards, NUL, lone surrogates, empty or 100k-character text. Every search is served (or
refused with this package's error), never a server error, and never returns an item outside the
searched prefix, although the other tenant's items hold the very same words."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, PutOp, SearchOp

from langmem_adapters import LangmemAdaptersError
from tests.reliability.hostile import indexed_astore
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, ours_only

pytestmark = ours_only("InMemoryStore has no hybrid search and accepts any Python object")

HOSTILE = [
    "",
    "   ",
    "\t\n",
    "'; DROP TABLE langmem_store; --",
    "' OR '1'='1",
    "$1 %s %(x)s",
    '"order 48213"',
    '"unclosed',
    "@p:{x} | -foo ~bar",
    "@text:foo",
    "@e:[1 2]",
    "=>[KNN 10 @e $B]",
    "a|b",
    "|",
    "@",
    "*",
    "-",
    "~",
    "(",
    ")",
    "-(a|b)",
    "*a*",
    "%",
    "%a%",
    "{",
    "}",
    "{a|b}",
    "foo & !bar",
    "foo <-> bar",
    "foo:*",
    "NOT",
    "OR",
    "and or not",
    "\\",
    "ERR_TLS_CERT_ALTNAME",
    "order 48213",
    "a\x00b",
    "\x00",
    "\ud800",
    "ok \udfff ok",
    "ü🙂\u202e",
    "🙂" * 1000,
    "x" * 100_000,
    " ".join(f"w{i}" for i in range(5000)),
]
# Every tenant's items hold the hostile words, so a lexical side that ignored the prefix would leak.
TEXTS = [
    "order 48213 shipped ERR_TLS_CERT_ALTNAME",
    "'; DROP TABLE langmem_store; -- foo bar a b",
    "@p:{x} | -foo ~bar text e KNN B",
    "and or not NOT OR w1 w2 x",
    "ü🙂 ok unclosed %a% 1 2",
]


def _fill(namespaces: list[tuple[str, ...]]) -> list[PutOp]:
    ops = [
        PutOp(ns, f"k{i}", {"text": text, "kind": "fact" if i % 2 else "note"})
        for ns in namespaces
        for i, text in enumerate(TEXTS)
    ]
    return ops + [PutOp(ns, "bare", {"kind": "fact"}) for ns in namespaces]  # no vector, no words


NAMESPACES: list[tuple[str, ...]] = [("a", "u1"), ("a", "u2"), ("b", "u3")]


def _served(
    hits: list[Any], prefix: tuple[str, ...], limit: int, flt: dict[str, Any] | None
) -> None:
    assert len(hits) <= limit
    for h in hits:
        assert h.namespace[: len(prefix)] == prefix, (prefix, h.namespace)
        assert flt is None or all(h.value.get(k) == v for k, v in flt.items())


def _refused(exc: Exception, text: str) -> None:
    ours = isinstance(exc, LangmemAdaptersError) and isinstance(exc, (ValueError, TypeError))
    assert ours and str(exc), (
        f"{type(exc).__module__}.{type(exc).__name__}: {exc} for {text[:80]!r}"
    )


@pytest.fixture
def hybrid_store(make_store: StoreFactory, backend: str) -> BaseStore:
    store = make_store(index=hash_index(fields=["text"], hybrid=True))
    assert store.index_spec.hybrid is not None  # type: ignore[attr-defined]  # the lexical side runs
    store.batch(_fill(NAMESPACES))
    return store


CASES: list[tuple[tuple[str, ...], dict[str, Any] | None, int, int]] = [
    (("a",), None, 10, 0),
    (("a", "u1"), None, 3, 1),
    (("a",), {"kind": "fact"}, 100, 0),
    ((), {"kind": "note"}, 2**70, 0),
]


def test_hostile_query_text_is_served_within_the_prefix(hybrid_store: BaseStore) -> None:
    store = hybrid_store
    before = store.search((), limit=1000)
    for text in HOSTILE:
        for prefix, flt, limit, offset in CASES:
            try:
                hits = store.search(prefix, query=text, filter=flt, limit=limit, offset=offset)
            except Exception as exc:  # the point: only our errors get out
                _refused(exc, text)
                continue
            _served(hits, prefix, limit, flt)
        assert store.search((), limit=1000) == before, text


def test_hostile_query_text_pages_and_batches(hybrid_store: BaseStore) -> None:
    """Paging through a hostile query's results gives every match once, in the one-page order; a
    batch of hostile searches answers each alone."""
    store = hybrid_store
    for text in ["'; DROP TABLE langmem_store; --", "@p:{x} | -foo ~bar", "order 48213", "(", ""]:
        whole = [(h.namespace, h.key) for h in store.search(("a",), query=text, limit=100)]
        assert len(whole) == 12  # every item under ("a",), the unscored ones last
        pages = [
            (h.namespace, h.key)
            for offset in range(0, 14, 3)
            for h in store.search(("a",), query=text, limit=3, offset=offset)
        ]
        assert pages == whole, text
        assert store.search(("a",), query=text, offset=2**64) == []
    ops = [SearchOp(("a", "u2"), None, 5, 0, text) for text in HOSTILE[:12]]
    for text, hits in zip(HOSTILE, store.batch(ops)):
        assert isinstance(hits, list)
        _served(hits, ("a", "u2"), 5, None)
        assert hits == store.search(("a", "u2"), query=text, limit=5)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
SYNTAX = st.sampled_from([*"\"'|@*-~(){}[]%:$&!<>=\\;, \x00", "\ud800", "NOT", "OR", "foo"])


def test_generated_query_text(hybrid_store: BaseStore) -> None:
    store = hybrid_store

    @FUZZ
    @given(st.lists(st.one_of(SYNTAX, st.text(max_size=8)), max_size=12).map("".join))
    def run(text: str) -> None:
        try:
            hits = store.search(("a", "u1"), query=text, limit=5)
        except Exception as exc:
            _refused(exc, text)
            return
        _served(hits, ("a", "u1"), 5, None)

    run()


async def test_hostile_query_text_async(make_astore: AsyncStoreFactory, backend: str) -> None:
    store = await indexed_astore(make_astore, hybrid=True)
    await store.abatch(_fill(NAMESPACES))
    for text in HOSTILE:
        for prefix, flt, limit, offset in CASES[:3]:
            try:
                hits = await store.asearch(
                    prefix, query=text, filter=flt, limit=limit, offset=offset
                )
            except Exception as exc:
                _refused(exc, text)
                continue
            _served(hits, prefix, limit, flt)
    assert len(await store.asearch((), limit=100)) == 18
