"""The Postgres batch plans driven as the sans-IO generators they are: each round answered here, so
what a plan sends, and in how many rounds, is checked without a server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.plan import plan, put_if_absent_plan
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import Round
from tests.stores import DIMS, hash_index

T = Tables("unit")
SPEC = IndexSpec.from_config(hash_index(fields=["text"]))


def run(steps: Any, answer: Callable[[Round], list[list[Any]]]) -> tuple[Any, list[Round]]:
    """Drive ``steps``: embeddings answered with unit vectors, rounds by ``answer``; the result and
    the rounds sent."""
    rounds: list[Round] = []
    reply: Any = None
    try:
        while True:
            request = steps.send(reply)
            if isinstance(request, Embed):
                reply = [[1.0] + [0.0] * (DIMS - 1) for _ in request.texts]
            else:
                rounds.append(request)
                reply = answer(request)
    except StopIteration as done:
        return done.value, rounds


def no_rows(request: Round) -> list[list[Any]]:
    return [[] for _ in request.statements]


def test_put_if_absent_that_creates_writes_its_vectors_after_in_the_same_transaction() -> None:
    op = PutOp(("a",), "k", {"text": "hello"})
    created, rounds = run(
        put_if_absent_plan(T, SPEC, op),
        lambda r: [[("a", "k")]] if r.tx else no_rows(r),
    )
    assert created is True
    writes = [r for r in rounds if r.tx]
    assert len(writes) == 1 and len(writes[0].statements) == 1  # the upsert alone
    assert "RETURNING" in writes[0].statements[0].sql
    assert any("INSERT INTO unit_vectors" in s.sql for s in rounds[-1].statements)


def test_put_if_absent_over_a_live_item_writes_no_vectors() -> None:
    op = PutOp(("a",), "k", {"text": "hello"})
    created, rounds = run(put_if_absent_plan(T, SPEC, op), no_rows)
    assert created is False
    assert not any(
        "unit_vectors" in s.sql and "INSERT" in s.sql for r in rounds for s in r.statements
    )


def test_put_if_absent_without_an_index_is_one_round() -> None:
    created, rounds = run(put_if_absent_plan(T, None, PutOp(("a",), "k", {"v": 1})), no_rows)
    assert created is False and len(rounds) == 1 and rounds[0].tx


def test_a_batch_of_gets_is_one_round_of_one_statement() -> None:
    ops = [GetOp(("a",), "k1"), GetOp(("a",), "k2")]
    results, rounds = run(plan(T, SPEC, ops), no_rows)
    assert results == [None, None]
    assert len(rounds) == 1 and len(rounds[0].statements) == 1


def test_a_batch_of_puts_without_an_index_is_one_round() -> None:
    ops = [PutOp(("a",), "k1", {"v": 1}), PutOp(("a",), "k2", None)]
    results, rounds = run(plan(T, None, ops), no_rows)
    assert results == [None, None]
    assert len(rounds) == 1 and not rounds[0].tx
    assert [s.sql.split()[0] for s in rounds[0].statements] == ["DELETE", "WITH"]


def test_a_hybrid_search_reads_only_the_page_items_neither_side_read() -> None:
    """The vector side's page and the lexical side's best ``valued(0, 2)`` come with their items;
    the fused page's other items (here "l4": close to the query, fourth by words, past the 3
    valued for a page of 2) are read in one more round, only they."""
    spec = IndexSpec.from_config(hash_index(fields=["text"], hybrid=True))
    assert spec.hybrid is not None and spec.hybrid.fusion == "information"
    now = datetime.now(timezone.utc)

    def value(key: str, read: bool = True) -> tuple[Any, ...]:
        return ({"text": key}, now, now, None) if read else (None, now, now, None)

    vector = [("a", k, *value(k), d) for k, d in (("v1", 0.10), ("v2", 0.20))]
    lexical = [
        ("a", k, idf, d, 6.0, *value(k, k != "l4"))
        for k, idf, d in (
            ("l1", 5.0, 0.90),
            ("l2", 4.95, 0.91),
            ("l3", 4.92, 0.92),
            ("l4", 4.9, 0.15),
        )
    ]
    asked: list[Any] = []

    def answer(r: Round) -> list[list[Any]]:
        out: list[list[Any]] = []
        for st in r.statements:
            if st.sql.startswith("SELECT count(*)"):
                out.append([(10,)])
            elif "WITH size" in st.sql:
                out.append(lexical)
            elif " AS d" in st.sql:
                out.append(vector)
            elif "s.ns = r.ns AND s.key = r.key" in st.sql:
                asked.append(st.params)
                out.append([("a", "l4", *value("l4"))])
            else:
                out.append([])
        return out

    (page,), _ = run(plan(T, spec, [SearchOp(("a",), query="order 7", limit=2)]), answer)
    assert [(item.key, item.value) for item in page] == [
        ("l4", {"text": "l4"}),
        ("l1", {"text": "l1"}),
    ]
    assert len(asked) == 1 and "l4" in str(asked[0]) and "l1" not in str(asked[0])


def test_the_lexical_statement_is_short_enough_for_psycopg_to_keep_its_parsing() -> None:
    """psycopg parses a statement's placeholders again on every execution unless its text is at
    most 4,096 characters (29 us of a hybrid search when it was 4,099, docs/hybrid.md): the default
    hybrid store's lexical statement (information fusion, stop words aside, under a namespace,
    the default table prefix) stays under it."""
    spec = IndexSpec.from_config(hash_index(fields=["text"], hybrid=True))
    op = SearchOp(("memories", "user-42"), query="which device did I get first", limit=10)

    def answer(r: Round) -> list[list[Any]]:
        return [[(10,)] if st.sql.startswith("SELECT count(*)") else [] for st in r.statements]

    _, rounds = run(plan(Tables("langmem"), spec, [op]), answer)
    (lexical,) = [st for r in rounds for st in r.statements if "WITH size" in st.sql]
    assert "about" in lexical.sql  # the stop words are left out, in the statement's text
    assert len(lexical.sql) <= 4096
