"""``langmem_adapters.server`` without the LangGraph server: the variables' parsing (a bad value names
its variable) and ``generate_store``'s start and stop on the test Postgres and Redis."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from psycopg_pool import AsyncConnectionPool

import langmem_adapters
from langmem_adapters import server
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import LangmemAdaptersError, ServerConfigError, StoreConnectionError
from langmem_adapters.postgres import AsyncPostgresStore
from langmem_adapters.server import ServerSettings, generate_store
from tests import servers
from tests.server.support import drop_tables, postgres_rows, store_url
from tests.servers import free_port
from tests.waiting import await_until


def test_defaults_are_the_embedded_store_without_index_or_ttl() -> None:
    settings = ServerSettings.from_env({})
    assert settings.location.kind == "postgres"
    assert settings.location.data_dir is not None
    assert (settings.index, settings.ttl, settings.sweep_minutes) == (None, None, None)
    # An empty variable counts as unset.
    assert ServerSettings.from_env({"LANGMEM_STORE_URL": "", "LANGMEM_EMBED": ""}) == settings


def test_values_are_parsed_as_the_cli_parses_them(tmp_path: Path) -> None:
    settings = ServerSettings.from_env(
        {
            "LANGMEM_STORE_URL": f"embedded:{tmp_path}",
            "LANGMEM_EMBED": "hash:32",
            "LANGMEM_INDEX_FIELDS": "text, tags[*]",
            "LANGMEM_TTL_MINUTES": "90",
            "LANGMEM_SWEEP_MINUTES": "0.5",
        }
    )
    assert settings.location.data_dir == tmp_path
    assert settings.index is not None
    assert settings.index["dims"] == 32
    assert isinstance(settings.index["embed"], HashEmbeddings)
    assert settings.index["fields"] == ["text", "tags[*]"]
    assert settings.ttl == {"default_ttl": 90.0}
    assert settings.sweep_minutes == 0.5

    pg = ServerSettings.from_env({"LANGMEM_STORE_URL": "postgresql://u:pw@db/app?table_prefix=mem"})
    assert (pg.location.kind, pg.location.table_prefix) == ("postgres", "mem")
    assert "pw" not in pg.location.display
    rs = ServerSettings.from_env({"LANGMEM_STORE_URL": "rediss://cache:6380/1?prefix=agent"})
    assert (rs.location.kind, rs.location.table_prefix) == ("redis", "agent")
    assert ServerSettings.from_env({"LANGMEM_EMBED": "none"}).index is None


@pytest.mark.parametrize(
    ("variables", "named", "says"),
    [
        ({"LANGMEM_STORE_URL": "mysql://db/app"}, "LANGMEM_STORE_URL", "unsupported store URL"),
        (
            {"LANGMEM_STORE_URL": "postgresql://db/app?table_prefix=1bad"},
            "LANGMEM_STORE_URL",
            "table_prefix",
        ),
        ({"LANGMEM_STORE_URL": "official+redis://cache"}, "LANGMEM_STORE_URL", "can only be read"),
        ({"LANGMEM_EMBED": "hash:0"}, "LANGMEM_EMBED", "positive integer"),
        ({"LANGMEM_EMBED": "hash:many"}, "LANGMEM_EMBED", "positive integer"),
        ({"LANGMEM_EMBED": "ada-002"}, "LANGMEM_EMBED", "provider:model"),
        ({"LANGMEM_INDEX_FIELDS": "text"}, "LANGMEM_INDEX_FIELDS", "LANGMEM_EMBED"),
        (
            {"LANGMEM_INDEX_FIELDS": "text", "LANGMEM_EMBED": "none"},
            "LANGMEM_INDEX_FIELDS",
            "no embedder",
        ),
        ({"LANGMEM_TTL_MINUTES": "soon"}, "LANGMEM_TTL_MINUTES", "'soon'"),
        ({"LANGMEM_TTL_MINUTES": "0"}, "LANGMEM_TTL_MINUTES", "positive number"),
        ({"LANGMEM_TTL_MINUTES": "-5"}, "LANGMEM_TTL_MINUTES", "positive number"),
        ({"LANGMEM_TTL_MINUTES": "inf"}, "LANGMEM_TTL_MINUTES", "positive number"),
        ({"LANGMEM_SWEEP_MINUTES": "nan"}, "LANGMEM_SWEEP_MINUTES", "positive number"),
        ({"LANGMEM_SWEEP_MINUTES": "5m"}, "LANGMEM_SWEEP_MINUTES", "'5m'"),
    ],
)
def test_a_bad_value_names_its_variable(variables: dict[str, str], named: str, says: str) -> None:
    with pytest.raises(ServerConfigError) as raised:
        ServerSettings.from_env(variables)
    message = str(raised.value)
    assert message.startswith(named), message
    assert says in message
    assert "--embed" not in message  # the CLI's option names do not leak into the server's messages


def test_the_error_is_ours_a_value_error_and_importable_where_raised() -> None:
    assert issubclass(ServerConfigError, LangmemAdaptersError)
    assert issubclass(ServerConfigError, ValueError)
    assert server.ServerConfigError is langmem_adapters.ServerConfigError is ServerConfigError


async def test_a_bad_variable_fails_on_entering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGMEM_STORE_URL", servers.redis_url(modules=True))
    monkeypatch.setenv("LANGMEM_SWEEP_MINUTES", "-1")
    with pytest.raises(ServerConfigError, match="LANGMEM_SWEEP_MINUTES"):
        async with generate_store():
            pytest.fail("a store was yielded despite a bad variable")


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
async def test_an_unreachable_server_fails_at_once_naming_the_variable(
    scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGMEM_STORE_URL", f"{scheme}://user:hunter2@127.0.0.1:{free_port()}/0")
    started = time.monotonic()
    with pytest.raises(StoreConnectionError) as raised:
        async with generate_store():
            pytest.fail("a store was yielded for a server that is not there")
    assert time.monotonic() - started < 10  # not a pool's 30 s timeout
    message = str(raised.value)
    assert message.startswith("LANGMEM_STORE_URL: cannot connect to")
    assert "hunter2" not in message


@pytest.mark.parametrize("backend", ["postgres", "redis"])
async def test_generate_store_sets_up_sweeps_and_closes(
    backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = f"gen{uuid.uuid4().hex[:10]}"
    url = store_url(backend, prefix)
    for name, value in {
        "LANGMEM_STORE_URL": url,
        "LANGMEM_EMBED": "hash:16",
        "LANGMEM_INDEX_FIELDS": "text",
        "LANGMEM_TTL_MINUTES": "30",
        "LANGMEM_SWEEP_MINUTES": "0.01",
    }.items():
        monkeypatch.setenv(name, value)

    try:
        await _check_generated_store(backend, prefix, caplog)
    finally:
        if backend == "postgres":
            drop_tables(prefix)


async def _check_generated_store(
    backend: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="langmem_adapters")
    async with generate_store() as store:
        expected = "AsyncPostgresStore" if backend == "postgres" else "AsyncRedisStore"
        assert type(store).__name__ == expected
        assert store.ttl_config == {"default_ttl": 30.0}
        sweeper = await store.start_ttl_sweeper()  # already running: the same task comes back
        assert not sweeper.done()
        await store.aput(("docs",), "a", {"text": "the sweeper runs", "other": "not embedded"})
        await store.aput(("docs",), "gone", {"text": "short-lived"}, ttl=0.005)  # 0.3 s
        if backend == "postgres":
            assert postgres_rows(prefix, "gone") == 1
        # The sweeper (every 0.6 s) removes the expired item: deleted, not only hidden.
        await await_until(lambda: "TTL sweep removed 1 items" in caplog.text, what="a sweep")
        if backend == "postgres":
            assert postgres_rows(prefix, "gone") == 0
        (hit,) = await store.asearch(("docs",), query="the sweeper runs")
        assert hit.key == "a"  # live items stay
        assert hit.score is not None and hit.score > 0.99  # set up with an index on "text"
        (record,) = [r async for r in store.aiter_items(("docs",))]
        assert record.ttl_minutes == 30.0  # LANGMEM_TTL_MINUTES is the default TTL
        pool = store.conn if isinstance(store, AsyncPostgresStore) else None
    assert sweeper.done()
    if backend == "postgres":
        assert isinstance(pool, AsyncConnectionPool)
        assert pool.closed


def _store_json(**section: object) -> str:
    return json.dumps({"path": "langmem_adapters.server.generate_store", **section})


def test_langgraph_json_index_and_ttl_are_read_and_variables_override(tmp_path: Path) -> None:
    (tmp_path / "emb.py").write_text(
        "from langmem_adapters.embeddings import HashEmbeddings\nembeddings = HashEmbeddings(24)\n"
    )
    section = _store_json(
        index={"embed": f"{tmp_path}/emb.py:embeddings", "dims": 24, "fields": ["text"]},
        ttl={"default_ttl": 30, "refresh_on_read": False, "sweep_interval_minutes": 2},
    )
    settings = ServerSettings.from_env({"LANGGRAPH_STORE": section})
    assert settings.index is not None and settings.index["dims"] == 24
    assert isinstance(settings.index["embed"], HashEmbeddings)
    assert settings.index["fields"] == ["text"]
    assert settings.ttl == {"default_ttl": 30.0, "refresh_on_read": False}
    assert settings.sweep_minutes == 2.0
    bare = ServerSettings.from_env(
        {"LANGGRAPH_STORE": _store_json(index={"embed": "hash", "dims": 40})}
    )
    assert bare.index is not None and bare.index["dims"] == 40 and bare.index["fields"] == ["$"]
    overridden = ServerSettings.from_env(
        {
            "LANGGRAPH_STORE": section,
            "LANGMEM_EMBED": "hash:16",
            "LANGMEM_INDEX_FIELDS": "body",
            "LANGMEM_TTL_MINUTES": "5",
            "LANGMEM_SWEEP_MINUTES": "1",
        }
    )
    assert overridden.index is not None
    assert (overridden.index["dims"], overridden.index["fields"]) == (16, ["body"])
    assert overridden.ttl == {"default_ttl": 5.0, "refresh_on_read": False}
    assert overridden.sweep_minutes == 1.0


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"index": {"embed": "hash:32", "dims": 48}}, "store.index.dims is 48 but"),
        ({"index": {"embed": "nope"}}, "store.index.embed must be"),
        ({"index": {"embed": 5}}, "store.index.embed must be a string"),
        ({"index": {"embed": "./missing.py:x"}}, "store.index.embed: cannot load"),
        ({"index": {"embed": "hash", "dims": 0}}, "store.index.dims must be a positive"),
        ({"index": {"fields": ["a"]}}, "store.index.fields names fields"),
        ({"ttl": {"default_ttl": "soon"}}, "store.ttl.default_ttl must be a positive"),
        ({"ttl": {"refresh_on_read": 1}}, "refresh_on_read must be true or false"),
        ({"ttl": []}, "store.ttl must be an object"),
    ],
)
def test_a_bad_langgraph_json_key_is_named(section: dict[str, object], says: str) -> None:
    with pytest.raises(ServerConfigError, match=re.escape(says)) as info:
        ServerSettings.from_env({"LANGGRAPH_STORE": _store_json(**section)})
    assert "langgraph.json" in str(info.value)


def test_unreadable_langgraph_store_variable_is_named() -> None:
    for text in ("{not json", "[1]"):
        with pytest.raises(ServerConfigError, match="LANGGRAPH_STORE"):
            ServerSettings.from_env({"LANGGRAPH_STORE": text})
