"""What docs/semantics.md and the README say the official stores do, checked against the installed
releases on real servers (langgraph-checkpoint-postgres 3.2.0, langgraph-checkpoint-redis 0.5.2 when
written). A failure here means an official release changed: update the comparison, not this test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from langmem_adapters.embeddings import HashEmbeddings
from tests import servers


class Counting(HashEmbeddings):
    """Counts the texts embedded as documents and as queries."""

    def __init__(self, dims: int) -> None:
        super().__init__(dims)
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return super().embed_query(text)


@pytest.fixture
def official_pg_dsn() -> Iterator[str]:
    """A connection string whose search_path is a fresh schema (the official store's tables have
    fixed names), dropped afterwards, then ``public``: pgvector's types live there (created here if
    no test did yet), so the official ``CREATE EXTENSION IF NOT EXISTS`` neither misses them nor
    puts the extension in the schema dropped at the end."""
    dsn = servers.postgres_dsn()
    schema = f"official{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield psycopg.conninfo.make_conninfo(dsn, options=f"-csearch_path={schema},public")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _keys(items: list[Any]) -> list[str]:
    return sorted(i.key for i in items)


def test_official_postgres_store(official_pg_dsn: str) -> None:
    from langgraph.store.postgres import PostgresStore

    embed = Counting(16)
    index: Any = {"dims": 16, "embed": embed, "fields": ["text"]}
    with PostgresStore.from_conn_string(official_pg_dsn, index=index) as store:
        store.setup()
        # Fixed in 3.2.0 (langgraph #8300): whole labels, LIKE patterns escaped.
        for label in ("john_doe", "john-doe", "johnXdoe", "john_doex"):
            store.put(("users", label), "k", {"text": label})
        assert {i.namespace for i in store.search(("users", "john_doe"))} == {("users", "john_doe")}
        # $gt/$lt compare text (langgraph #7684); $ne excludes a missing field.
        for key, value in (("nine", {"n": 9}), ("ten", {"n": 10}), ("none", {})):
            store.put(("f",), key, {**value, "text": key})
        assert store.search(("f",), filter={"n": {"$gt": 9}}) == []
        assert store.search(("f",), filter={"n": {"$lt": 10}}) == []
        assert _keys(store.search(("f",), filter={"n": {"$ne": 9}})) == ["ten"]
        for operator in ("$in", "$exists", "$bogus"):
            with pytest.raises(ValueError, match="Unsupported operator"):
                store.search(("f",), filter={"n": {operator: [9]}})
        # Old vectors stay after index=False; unchanged text is embedded again; queries go
        # through embed_documents; items without vectors are missing from a query search.
        store.put(("v",), "k", {"text": "apples and pears"})
        store.put(("v",), "k", {"text": "apples and pears"}, index=False)
        (hit,) = store.search(("v",), query="apples and pears")
        assert hit.score is not None and hit.score > 0.99
        before = embed.documents
        store.put(("v",), "k2", {"text": "bananas"})
        store.put(("v",), "k2", {"text": "bananas"})
        assert embed.documents - before == 2
        queries, documents = embed.queries, embed.documents
        store.search(("v",), query="bananas")
        assert (embed.queries - queries, embed.documents - documents) == (0, 1)
        store.put(("w",), "plain", {"text": "cherries"}, index=False)
        store.put(("w",), "indexed", {"text": "cherries"})
        assert _keys(store.search(("w",), query="cherries")) == ["indexed"]
        # Bad input reaches the database.
        with pytest.raises(psycopg.Error):
            store.put(("bad",), "nan", {"x": float("nan")})
        with pytest.raises(psycopg.Error):
            store.search(("f",), limit=-1)
    with PostgresStore.from_conn_string(official_pg_dsn, ttl={"default_ttl": 60}) as store:
        store.setup()
        store.put(("t",), "fraction", {"a": 1}, ttl=0.1)  # the TTL column holds whole minutes
        store.get(("t",), "fraction")  # a read refreshes with the stored (rounded) TTL: 0 minutes
        with psycopg.connect(official_pg_dsn) as conn:
            row = conn.execute(
                "SELECT ttl_minutes, expires_at <= now() FROM store WHERE key = 'fraction'"
            ).fetchone()
        assert row == (0, True)  # so the read expired it at once
        assert store.get(("t",), "fraction") is not None  # expired, not swept: still returned


def test_official_redis_store() -> None:
    from langgraph.store.redis import RedisStore

    with RedisStore.from_conn_string(servers.redis_url(modules=True)) as store:
        store.setup()
        run = uuid.uuid4().hex[:8]
        for i in range(30):
            store.put((run, "u1"), f"k{i}", {"kind": "fact" if i % 3 == 0 else "note", "n": i})
        store.put((run, "u1x"), "other", {"kind": "fact", "n": 1})
        assert store.get((run, "u1"), "k0") is None  # stored, but not found
        assert len(store.search((run, "u1"), filter={"kind": "fact"}, limit=10)) < 10  # 10 match
        found = {i.namespace for i in store.search((run, "u1"), limit=100)}
        assert (run, "u1x") in found  # labels matched as text prefixes
        assert store.search((run, "u1"), filter={"n": {"$gt": 25}}) == []  # 26..29 match
