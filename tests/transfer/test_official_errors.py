"""The readers of the official stores' data report a source that cannot be read with this
package's errors, naming the source and the problem (the driver's error as ``__cause__``): an
unreachable server, a connection lost mid-read, a ``store`` table of another shape, a document
without the official fields. All on real servers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from langmem_adapters.errors import (
    InvalidRecordError,
    ServerRefusedError,
    StoreConnectionError,
)
from langmem_adapters.transfer import OfficialPostgresReader, OfficialRedisReader
from tests import servers


@contextmanager
def _schema(conn: psycopg.Connection[object], ddl: str) -> Iterator[None]:
    """A fresh schema first on ``conn``'s search path, holding what ``ddl`` makes."""
    name = f"off_{uuid.uuid4().hex[:10]}"
    conn.execute(f"CREATE SCHEMA {name}")
    try:
        conn.execute(f"SET search_path TO {name}")
        conn.execute(ddl)
        yield
    finally:
        with psycopg.connect(servers.postgres_dsn(), autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def test_a_store_table_of_another_shape_is_refused_by_name() -> None:
    with (
        psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn,
        _schema(conn, "CREATE TABLE store (prefix text, key text)"),
    ):
        reader = OfficialPostgresReader(conn, name="the old db")
        with pytest.raises(ServerRefusedError, match="the old db refused a read") as err:
            list(reader.pages())
        assert isinstance(err.value.__cause__, psycopg.errors.UndefinedColumn)
        assert 'column "value" does not exist' in str(err.value)


def test_a_postgres_connection_lost_mid_read() -> None:
    official = (
        "CREATE TABLE store (prefix text, key text, value jsonb, created_at timestamptz, "
        "updated_at timestamptz, expires_at timestamptz, ttl_minutes int); "
        "INSERT INTO store SELECT 'p', 'k' || i, '{}', now(), now(), NULL, NULL "
        "FROM generate_series(1, 5) i"
    )
    with (
        psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn,
        _schema(conn, official),
    ):
        reader = OfficialPostgresReader(conn, name="the old db")
        pages = reader.pages(page_size=2)
        assert len(next(pages)[0]) == 2
        with psycopg.connect(servers.postgres_dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        with pytest.raises(StoreConnectionError, match="in the old db: the connection failed"):
            next(pages)
        with pytest.raises(StoreConnectionError, match="the old db"):
            reader.count()


def test_an_unreachable_redis_is_named() -> None:
    client = redis.Redis(port=servers.free_port(), retry=Retry(NoBackoff(), 0))
    with pytest.raises(StoreConnectionError, match="official store in the old redis") as err:
        OfficialRedisReader(client, name="the old redis")
    assert isinstance(err.value.__cause__, redis.ConnectionError)


def read_page_of(reader: OfficialRedisReader, key: str) -> None:
    """Read the one-record page that holds ``key`` (resuming after the key listed before it)."""
    at = reader.keys.index(key)
    next(reader.pages([reader.keys[at - 1]] if at else None, page_size=1))


def test_a_document_without_the_official_fields_is_named() -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    key = f"store:{uuid.uuid4().hex}"  # listed by the reader: the official stores' key pattern
    try:
        client.execute_command("JSON.SET", key, "$", json.dumps({"key": "k", "value": {}}))
        reader = OfficialRedisReader(client, name="the old redis")
        assert key in reader.keys
        with pytest.raises(InvalidRecordError, match=f"{key} in the old redis is not an official"):
            read_page_of(reader, key)
    finally:
        client.delete(key)
        client.close()


def test_documents_on_a_server_without_json_are_refused() -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=False))
    key = f"store:{uuid.uuid4().hex}"
    try:
        client.hset(key, "prefix", "p")
        reader = OfficialRedisReader(client, name="the plain redis")
        with pytest.raises(ServerRefusedError, match=f"cannot read {key} from the plain redis"):
            read_page_of(reader, key)
    finally:
        client.delete(key)
        client.close()
