"""Hybrid search on Postgres: the ``tsv`` column kept with the vector rows, its GIN index, the
migration of tables made before hybrid search, reindex and restore keeping it, one round trip, and
what a non-hybrid store does not pay."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_adapters import HashEmbeddings
from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.hybrid import fuse
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore, lexical
from langmem_adapters.postgres.connection import Connections, Session
from langmem_adapters.postgres.fusion import LexicalRow
from langmem_adapters.postgres.lexical import NS_SHARE, lexical_search, prefix_query, riding
from langmem_adapters.postgres.schema import NS_WORD_CHARS, ns_words, ns_words_sql
from langmem_adapters.postgres.sql import Round, Statement
from tests import servers
from tests.postgres.wire import traced
from tests.stores import hash_index


@pytest.fixture
def conn() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as c:
        yield c


@pytest.fixture
def prefix() -> str:
    """A fresh table prefix: every test gets its own tables."""
    return f"hy{uuid.uuid4().hex[:10]}"


def index(hybrid: Any = True, **extra: Any) -> dict[str, Any]:
    return hash_index(fields=["text", "tags[*]"], hybrid=hybrid, **extra)


def store_of(conn: psycopg.Connection[Any], prefix: str, **kw: Any) -> PostgresStore:
    store = PostgresStore(conn, index=index(**kw), table_prefix=prefix)  # type: ignore[arg-type]
    store.setup()
    return store


def tsv(conn: psycopg.Connection[Any], table: str) -> dict[tuple[str, str], str | None]:
    rows = conn.execute(f"SELECT key, field, tsv::text FROM {table} ORDER BY key, field").fetchall()
    return {(k, f): t for k, f, t in rows}


def test_rows_keep_their_tsvector_with_the_vector(conn: Any, prefix: str) -> None:
    store = store_of(conn, prefix)
    store.put(("a",), "k", {"text": "Order 48213 shipped", "tags": ["ERR_TLS_CERT_ALTNAME", "x"]})
    table = f"{prefix}_vectors_vector64"
    got = tsv(conn, table)
    assert got[("k", "text")] == "'48213':2 'order':1 'shipped':3"
    assert got[("k", "tags[*].0")] == "'altname':4 'cert':3 'err':1 'tls':2"
    gin = f"{table}_lex_idx"
    assert conn.execute("SELECT to_regclass(%s)", [gin]).fetchone()[0] is not None
    # A changed text gets a new tsvector in the same put; a field no longer indexed loses its row.
    store.put(("a",), "k", {"text": "Order 55555 lost"})
    assert tsv(conn, table) == {("k", "text"): "'55555':2 'lost':3 'order':1"}
    # A per-put index override: only those fields are in both sides.
    store.put(("a",), "o", {"text": "nothing", "title": "Invoice 777"}, index=["title"])
    assert tsv(conn, table)[("o", "title")] == "'777':2 'invoice':1"
    assert [r.key for r in store.search(("a",), query="invoice 777", limit=1)] == ["o"]


def test_a_non_hybrid_store_pays_nothing(conn: Any, prefix: str) -> None:
    store = store_of(conn, prefix, hybrid=False)
    store.put(("a",), "k", {"text": "Order 48213 shipped"})
    table = f"{prefix}_vectors_vector64"
    assert tsv(conn, table) == {("k", "text"): None}
    assert conn.execute("SELECT to_regclass(%s)", [f"{table}_lex_idx"]).fetchone()[0] is None
    with traced(conn) as trace:
        store.put(("a",), "k2", {"text": "Order 1 shipped"})
        store.search(("a",), query="order 48213")
    sent = trace.sql
    # No words: only a changed text's row drops the ones a hybrid store wrote (``tsv = NULL``).
    words = [sql.replace("tsv = NULL", "") for sql in sent]
    assert sent and not any("tsv" in sql or "to_tsvector" in sql for sql in words)
    assert sum("tsv = NULL" in sql for sql in sent) == 1


def test_one_round_trip_for_any_number_of_hybrid_searches(conn: Any, prefix: str) -> None:
    """A vector search is one round, and so is a hybrid search whose sides read its page's items
    (the vector side's page, the lexical side's best), and a batch of several."""
    hybrid = store_of(conn, prefix)
    hybrid.batch([PutOp(("a",), f"k{i}", {"text": f"memory {i} of order {i}"}) for i in range(30)])
    vector = store_of(conn, prefix, hybrid=False)
    counts = []
    for store in (vector, hybrid):
        assert store.search(("a",), query="order 8", limit=5)  # identity checked, sizes read
        with traced(conn) as trace:
            assert store.search(("a",), query="order 7", limit=5)
        counts.append(trace.rounds)
    searches = [SearchOp(("a",), query=f"order {i}", limit=3) for i in (1, 2, 3)]
    with traced(conn) as trace:
        pages = hybrid.batch(searches)
    assert counts == [1, 1] and trace.rounds == 1
    assert [page[0].key for page in pages] == ["k1", "k2", "k3"]  # type: ignore[index]
    assert pages[0][0].value == {"text": "memory 1 of order 1"}  # type: ignore[index]
    assert hybrid.search(("none",), query="order 7") == []  # sizes read
    with traced(conn) as trace:  # an empty page has no items to read
        assert hybrid.search(("none",), query="order 7") == []
    assert trace.rounds == 3  # the sides, the exact query of the short pool, the unscored tail


def test_setup_fills_tables_made_before_hybrid(conn: Any, prefix: str) -> None:
    old = store_of(conn, prefix, hybrid=False)
    old.batch(
        [
            PutOp(("a",), "order", {"text": "Order 48213 shipped", "tags": ["red", "blue"]}),
            PutOp(("a",), "tls", {"text": "ERR_TLS_CERT_ALTNAME again"}),
            PutOp(("a",), "custom", {"text": "x", "title": "Invoice 777"}, index=["title"]),
            PutOp(("a",), "off", {"text": "Order 48213"}, index=False),
        ]
        + [PutOp(("a",), f"d{i}", {"text": f"order {50000 + i} status"}) for i in range(30)]
    )
    table = f"{prefix}_vectors_vector64"
    # A table from before hybrid search had no tsv column at all.
    conn.execute(f"ALTER TABLE {table} DROP COLUMN tsv")
    # A row whose text no longer matches its item (its hash) cannot be read again.
    conn.execute(f"UPDATE {table} SET text_hash = 'stale' WHERE key = 'd0'")
    store = store_of(conn, prefix)
    got = tsv(conn, table)
    assert got[("order", "text")] == "'48213':2 'order':1 'shipped':3"
    assert got[("order", "tags[*].1")] == "'blue':1"
    assert got[("custom", "title")] == "'777':2 'invoice':1"
    assert got[("d0", "text")] == ""
    assert None not in got.values()
    assert "order" in [r.key for r in store.search(("a",), query="status of 48213", limit=3)]
    assert [r.key for r in store.search(("a",), query="ERR_TLS_CERT_ALTNAME", limit=1)] == ["tls"]
    # Idempotent: a second setup has nothing to fill.
    before = conn.execute(f"SELECT xmin::text, key, field FROM {table} ORDER BY 2, 3").fetchall()
    store_of(conn, prefix)
    after = conn.execute(f"SELECT xmin::text, key, field FROM {table} ORDER BY 2, 3").fetchall()
    assert before == after


def test_setup_replaces_the_index_of_tsv_alone(conn: Any, prefix: str) -> None:
    """Hybrid stores before 2026-12-05 indexed ``tsv`` alone; setup builds the index of the words
    and the namespaces' words in its place, and analyzes the table (a table no write changes would
    not be again, and the namespace words' shares come from the index's statistics)."""
    store_of(conn, prefix).put(("a", "b"), "k", {"text": "Order 48213 shipped"})
    table = f"{prefix}_vectors_vector64"
    conn.execute(f"DROP INDEX {table}_lex_idx")
    conn.execute(f"CREATE INDEX {table}_tsv_idx ON {table} USING gin (tsv)")
    store = store_of(conn, prefix)
    assert conn.execute("SELECT to_regclass(%s)", [f"{table}_tsv_idx"]).fetchone() == (None,)
    assert conn.execute("SELECT to_regclass(%s)", [f"{table}_lex_idx"]).fetchone() != (None,)
    assert [r.key for r in store.search(("a", "b"), query="48213", limit=1)] == ["k"]
    # The table was analyzed with its new index: the search copied the namespace words' shares.
    copied = conn.execute(
        f"SELECT lex FROM {store.tables.terms} WHERE left(lex, 1) = ' ' ORDER BY lex"
    ).fetchall()
    assert copied == [(" a",), (" b",)]


def test_reindex_and_restore_keep_the_lexical_side(conn: Any, prefix: str) -> None:
    store = store_of(conn, prefix)
    store.batch(
        [PutOp(("a",), "id", {"text": "ticket T-4242 closed"})]
        + [PutOp(("a",), f"d{i}", {"text": f"ticket T-{1000 + i} open"}) for i in range(10)]
    )
    store.reindex(embed=HashEmbeddings(32))
    new_table = f"{prefix}_vectors_vector32_g1"
    expected = conn.execute("SELECT to_tsvector('simple', 'ticket T-4242 closed')::text")
    assert tsv(conn, new_table)[("id", "text")] == expected.fetchone()[0]
    assert None not in tsv(conn, new_table).values()
    assert conn.execute("SELECT to_regclass(%s)", [f"{new_table}_lex_idx"]).fetchone()[0]
    assert [r.key for r in store.search(("a",), query="T-4242", limit=1)] == ["id"]
    copy = PostgresStore(conn, index=index(), table_prefix=prefix + "c")  # type: ignore[arg-type]
    copy.setup()
    copy.restore(store.iter_items(()))
    assert None not in tsv(conn, f"{prefix}c_vectors_vector64").values()
    assert [r.key for r in copy.search(("a",), query="T-4242", limit=1)] == ["id"]


def test_text_config_and_hostile_lexemes(conn: Any, prefix: str) -> None:
    # (the relative fusion's statement: it needs no query vector)
    english = store_of(conn, prefix, hybrid={"text_config": "english", "fusion": "relative"})
    english.put(("a",), "ship", {"text": "the parcels were shipped yesterday"})
    english.put(("a",), "other", {"text": "a cat sat on the mat"})
    spec = english.index_spec
    assert spec is not None and spec.hybrid is not None
    # Stemming: "shipping" and "shipped" are one lexeme under the english configuration.
    statement = lexical_search(
        english.tables, spec, spec.hybrid, SearchOp(("a",), None, 5, 0, "shipping"), (), 5
    )
    with conn.transaction():
        rows = conn.execute(statement.sql, statement.params).fetchall()
    assert [r[1] for r in rows] == ["ship"]
    # Lexemes with quotes and backslashes are matched literally, never parsed as query syntax.
    odd = store_of(conn, prefix + "o")
    odd.put(("a",), "q", {"text": "see http://x.io/a?b='1'&c=\\2 now"})
    odd.put(("a",), "z", {"text": "unrelated words"})
    got = odd.search(("a",), query="http://x.io/a?b='1'&c=\\2", limit=2)
    assert got[0].key == "q"


async def test_async_store_fills_and_searches(prefix: str) -> None:
    dsn = servers.postgres_dsn()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
        old = AsyncPostgresStore(aconn, index=index(hybrid=False), table_prefix=prefix)  # type: ignore[arg-type]
        await old.setup()
        await old.abatch(
            [PutOp(("a",), "id", {"text": "ERR_HTTP2_STREAM on upload"})]
            + [PutOp(("a",), f"d{i}", {"text": f"upload {i} worked"}) for i in range(10)]
        )
        store = AsyncPostgresStore(aconn, index=index(), table_prefix=prefix)  # type: ignore[arg-type]
        await store.setup()
        got = await store.asearch(("a",), query="ERR_HTTP2_STREAM", limit=1)
        assert [r.key for r in got] == ["id"]


def test_a_non_hybrid_rewrite_drops_the_old_words(conn: Any, prefix: str) -> None:
    """A non-hybrid store sharing the tables writes changed text with ``tsv`` NULL (setup of a hybrid
    store fills it again): the old text's words no longer find the item."""
    hybrid = store_of(conn, prefix)
    hybrid.batch([PutOp(("u",), f"k{i}", {"text": f"note {i} about lunch"}) for i in range(40)])
    hybrid.put(("u",), "t", {"text": "ticket ZX48213 opened"})
    plain = store_of(conn, prefix, hybrid=False)
    plain.put(("u",), "t", {"text": "ticket closed nothing else"})
    table = f"{prefix}_vectors_vector64"
    assert tsv(conn, table)[("t", "text")] is None
    assert "t" not in [r.key for r in hybrid.search(("u",), query="ZX48213", limit=3)]
    plain.put(("u",), "t", {"text": "ticket closed nothing else"})  # unchanged text: row kept
    assert tsv(conn, table)[("t", "text")] is None
    store_of(conn, prefix)  # setup fills it from the new text
    assert tsv(conn, table)[("t", "text")] == "'closed':2 'else':4 'nothing':3 'ticket':1"


def test_the_lexical_side_ranks_depth_times_the_page(conn: Any, prefix: str) -> None:
    """With ``lexical_weight`` 2, an item third on the lexical side and on the vector side's page
    outranks the lexical second: the lexical side ranks ``max(20, depth x page)`` candidates, not
    the page (which left the third out). The page is the fusion of the full rankings. (Rank
    fusion: its ranks show the depth on four items; the depth is the same for either fusion.)"""
    options = {"lexical_weight": 2.0, "fusion": "rrf"}
    store = store_of(conn, prefix, hybrid=options)
    texts = {
        "a": "memo kiwi mango with several other words beside them today",
        "b": "memo papaya and more words that dilute its vector a lot",
        "c": "memo guava",
        "d": "memo lychee plus plenty of unrelated filler words around",
    }
    fillers = {f"f{i}": f"memo filler number {i}" for i in range(30)}
    store.batch([PutOp(("a",), k, {"text": v}) for k, v in {**texts, **fillers}.items()])
    query = "memo kiwi mango papaya guava lychee"
    spec = store.index_spec
    assert spec is not None and spec.hybrid is not None
    statement = lexical_search(
        store.tables, spec, spec.hybrid, SearchOp(("a",), None, 2, 0, query), (), 1000
    )
    with conn.transaction():
        rows = conn.execute(statement.sql, statement.params).fetchall()
    lexical = [((r.ns, r.key), float(r.score)) for r in map(LexicalRow._make, rows)]
    # "memo" is common: it selects nothing
    assert [k for k, _ in lexical] == [("a", "a"), ("a", "b"), ("a", "c"), ("a", "d")]
    vector = [
        ((".".join(r.namespace), r.key), float(r.score or 0.0))
        for r in store_of(conn, prefix, hybrid=False).search(("a",), query=query, limit=2)
    ]
    expected = [key for key, _ in fuse(vector, lexical, spec.hybrid)[:2]]
    assert expected != [key for key, _ in fuse(vector, lexical[:2], spec.hybrid)[:2]]
    got = [
        ("a", r.key)
        for r in store_of(conn, prefix, hybrid=options).search(("a",), query=query, limit=2)
    ]
    assert got == expected


@contextmanager
def racing(conn: Any, marker: str, race: Callable[[], None]) -> Iterator[None]:
    """While the block runs, ``race`` (another connection's writes) runs just before each statement
    the store sends on ``conn`` whose text holds ``marker`` (psycopg's public ``cursor_factory``)."""

    class Racing(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            if marker in str(query):
                race()
            return super().execute(query, params, **kwargs)

    conn.cursor_factory = Racing
    try:
        yield
    finally:
        conn.cursor_factory = psycopg.Cursor


def test_the_unscored_tail_skips_items_already_on_the_page(conn: Any, prefix: str) -> None:
    """The unscored tail reads in a later round: an item scored in the first and rewritten without a
    vector before the tail comes back there; it stays once, where it was scored."""
    store = store_of(conn, prefix, hybrid=False)
    store.put(("a",), "u", {"text": "never indexed"}, index=False)
    store.put(("a",), "k1", {"text": "order one shipped"})
    store.put(("a",), "k2", {"text": "order two shipped"})
    other = psycopg.connect(servers.postgres_dsn(), autocommit=True)
    writer = PostgresStore(other, index=index(hybrid=False), table_prefix=prefix)  # type: ignore[arg-type]

    def rewrite() -> None:
        writer.put(("a",), "k1", {"text": "order one shipped"}, index=False)

    with racing(conn, "AND NOT EXISTS", rewrite), closing(other):  # the tail's statement
        got = [(r.key, r.score is None) for r in store.search(("a",), query="order", limit=5)]
    assert sorted(k for k, _ in got) == ["k1", "k2", "u"]
    assert got[-1] == ("u", True) and all(not unscored for _, unscored in got[:2])


def test_page_items_neither_side_read_are_read_after_the_fusion(
    conn: Any, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page item neither side read (here the lexical side reads no values, and the vector side's
    page is of items the lexical side does not rank) is read in the round after the sides': one
    deleted in between is left out of the page, one rewritten in between comes with its new
    value."""
    monkeypatch.setattr(lexical, "valued", lambda offset, limit: (1, 0))  # no lexical values
    store = store_of(conn, prefix, hybrid={"vector_weight": 0.0})
    decoys = [PutOp(("a",), f"d{i}", {"text": "order shipped"}) for i in range(4)]  # nearest
    store.batch([*decoys, PutOp(("a",), "k1", {"text": "zebra 41"})])
    store.put(("a",), "k2", {"text": "yak 42"})
    other = psycopg.connect(servers.postgres_dsn(), autocommit=True)
    writer = PostgresStore(other, index=index(), table_prefix=prefix)  # type: ignore[arg-type]

    def delete_and_rewrite() -> None:
        writer.delete(("a",), "k1")
        writer.put(("a",), "k2", {"text": "yak 42", "note": "new"})

    with racing(conn, "s.ns = r.ns AND s.key = r.key AND", delete_and_rewrite), closing(other):
        got = store.search(("a",), query="order shipped 41 42", limit=2)
    assert [(r.key, r.value) for r in got] == [("k2", {"text": "yak 42", "note": "new"})]


def lexical_keys(store: PostgresStore, query: str) -> list[str]:
    """The items a lexical-only store (``vector_weight`` 0) scores for ``query`` under ``("a",)``."""
    return [r.key for r in store.search(("a",), query=query, limit=10) if r.score is not None]


def test_searches_copy_the_word_statistics_of_the_latest_analyze(conn: Any, prefix: str) -> None:
    store = store_of(conn, prefix, hybrid={"vector_weight": 0.0})
    store.batch([PutOp(("a",), f"k{i}", {"text": f"alpha note {i}"}) for i in range(300)])
    spec = store.index_spec
    assert spec is not None
    vt = store.tables.vectors(spec)
    conn.execute(f"ANALYZE {vt}")
    assert lexical_keys(store, "alpha 7") == ["k7"]  # "alpha" is in every row: common
    copied = dict(
        conn.execute(f"SELECT lex, f FROM {store.tables.terms} WHERE tbl = %s", [vt]).fetchall()
    )
    assert copied["alpha"] == pytest.approx(1.0) and copied["note"] == pytest.approx(1.0)
    assert copied[" a"] == pytest.approx(1.0)  # the namespace's word, from the lexical index
    assert "" in copied  # the epoch of the ANALYZE copied: the next refresh copies nothing


def test_statistics_of_rows_gone_since_a_truncate_are_not_used(conn: Any, prefix: str) -> None:
    """A word every row held before a TRUNCATE is rare among the rows written since: the lexical
    side counts the words of a table not analyzed since (its statistics describe rows that are
    gone, its live-row count lags), so the one new row holding it is found."""
    store = store_of(conn, prefix, hybrid={"vector_weight": 0.0})
    store.batch([PutOp(("a",), f"k{i}", {"text": f"alpha note {i}"}) for i in range(400)])
    spec = store.index_spec
    assert spec is not None
    conn.execute(f"ANALYZE {store.tables.vectors(spec)}")
    assert lexical_keys(store, "alpha") == []  # held by every row: left to the vector side
    conn.execute(f"TRUNCATE {store.tables.store} CASCADE")
    store.batch(
        [PutOp(("a",), "x", {"text": "alpha once"})]
        + [PutOp(("a",), f"b{i}", {"text": f"beta {i}"}) for i in range(5)]
    )
    assert lexical_keys(store, "alpha") == ["x"]


def test_a_refresh_that_cannot_write_never_fails_the_search(conn: Any, prefix: str) -> None:
    store = store_of(conn, prefix, hybrid={"vector_weight": 0.0})
    store.batch([PutOp(("a",), f"k{i}", {"text": f"alpha note {i}"}) for i in range(100)])
    spec = store.index_spec
    assert spec is not None
    conn.execute(f"ANALYZE {store.tables.vectors(spec)}")
    conn.execute("SET default_transaction_read_only = on")  # a read-only server, say
    try:
        assert lexical_keys(store, "alpha 7") == ["k7"]
    finally:
        conn.execute("SET default_transaction_read_only = off")
    assert conn.execute(f"SELECT count(*) FROM {store.tables.terms}").fetchone() == (0,)


def test_the_lexical_settings_ride_in_a_vector_statement_even_without_rows(
    conn: Any, prefix: str
) -> None:
    """What the lexical statement is planned with is set by the vector statement before it in the
    round (no statement of its own), also when the vector statement finds nothing."""
    store = store_of(conn, prefix)
    spec = store.index_spec
    assert spec is not None
    vectors = store.tables.vectors(spec)
    empty = Statement(f"SELECT ns, key, 0.0 AS d FROM {vectors} WHERE ns = %s", ["none"])
    with Session(Connections(conn)) as execute:
        rows, settings = execute(
            Round(
                [
                    riding(empty),
                    Statement(
                        "SELECT current_setting('plan_cache_mode'), "
                        "current_setting('enable_seqscan'), current_setting('enable_sort')"
                    ),
                ]
            )
        )
    assert rows == [] and settings == [("force_generic_plan", "off", "on")]


#: Namespaces whose labels a tsquery must quote with care, one long enough to be cut.
AWKWARD = [
    ("it's", "a\\b", "two words", "ü-ñ"),
    ("x" * 600, "y"),
    ("top", "o'r:*|&!()", "leaf"),
]


@pytest.mark.parametrize("namespace", AWKWARD)
def test_namespace_words_are_the_same_in_python_and_sql(conn: Any, namespace: Any) -> None:
    text = nsp.join(namespace)
    (got,) = conn.execute(f"SELECT {ns_words_sql('%s')}", [text]).fetchone()
    assert got == ns_words(text)
    assert all(len(w) <= NS_WORD_CHARS + 1 for w in got)
    for cut in range(1, len(namespace) + 1):  # a prefix's words are every namespace's under it
        assert set(ns_words(nsp.join(namespace[:cut]))) <= set(got)


def test_prefix_words_leave_out_those_most_rows_hold() -> None:
    shares = {" top": 0.9, " leaf": NS_SHARE}
    assert prefix_query(("top", "o'r:*|&!()", "leaf"), shares) == "' o''r:*|&!()' & ' leaf'"
    assert prefix_query(("top",), shares) is None
    assert prefix_query((), {}) is None
    assert prefix_query(("a\\b",), {}) == "' a\\\\b'"


@pytest.mark.parametrize("namespace", AWKWARD)
def test_a_search_under_a_prefix_reads_its_words_through_the_index(
    conn: Any, prefix: str, namespace: Any
) -> None:
    """Under a prefix the index is asked for the rows of the prefix's words (``prefix_query``): a
    common word then adds its weight to the item holding it there (were the words the client sends
    not the index's, no row would match and both items would score the rare word alone)."""
    store = store_of(conn, prefix, hybrid={"vector_weight": 0.0, "fusion": "relative"})
    store.batch(
        [
            PutOp(namespace, "a-rare", {"text": "zebra"}),
            PutOp(namespace, "b-both", {"text": "zebra common"}),
        ]
        + [PutOp(("other", f"u{i}"), f"o{i}", {"text": f"common {i}"}) for i in range(40)]
    )
    spec = store.index_spec
    assert spec is not None and spec.hybrid is not None
    for scope in (namespace, namespace[:1]):
        words = prefix_query(scope, {})
        assert words is not None
        op = SearchOp(scope, None, 10, 0, "zebra common")
        statement = lexical_search(store.tables, spec, spec.hybrid, op, (), 20, None, words)
        with conn.transaction():
            rows = conn.execute(statement.sql, statement.params).fetchall()
        assert [r[1] for r in rows] == ["b-both", "a-rare"]
        assert rows[0][2] > rows[1][2]
        assert [r.key for r in store.search(scope, query="zebra common", limit=2)] == [
            "b-both",
            "a-rare",
        ]
