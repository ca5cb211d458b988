"""What the server tests share: a free loopback port, a test server's store URL with a fresh prefix,
and the Postgres tables of that prefix (counting rows, dropping them afterwards)."""

from __future__ import annotations

import psycopg

from tests import servers


def store_url(backend: str, prefix: str) -> str:
    """``LANGMEM_STORE_URL`` for the test Postgres (``table_prefix``) or Redis (``prefix``), so a test's
    data is its own."""
    if backend == "postgres":
        dsn = servers.postgres_dsn()
        return f"{dsn}{'&' if '?' in dsn else '?'}table_prefix={prefix}"
    return f"{servers.redis_url(modules=True)}?prefix={prefix}"


def postgres_rows(prefix: str, key: str) -> int:
    """Rows of ``key`` in the Postgres store table of ``prefix``, expired or not."""
    with psycopg.connect(servers.postgres_dsn()) as conn:
        row = conn.execute(f"SELECT count(*) FROM {prefix}_store WHERE key = %s", [key]).fetchone()
    assert row is not None
    return int(row[0])


def drop_tables(prefix: str) -> None:
    """Drop the test Postgres tables a store with ``table_prefix=prefix`` made."""
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT 'DROP TABLE ' || string_agg(quote_ident(tablename), ', ') || ' CASCADE'"
            " FROM pg_tables WHERE tablename LIKE %s",
            [prefix + "\\_%"],
        ).fetchone()
        if row and row[0]:
            conn.execute(row[0])
