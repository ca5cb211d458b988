"""``langmem-adapters mcp`` through the ``mcp`` SDK's own clients, over stdio (the CLI as a
subprocess) and streamable HTTP (the CLI serving on a loopback port), on Postgres and Redis: the
tools listed, a round trip over every tier, bad input as tool errors that change nothing, and one
user never seeing or changing another's memories."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.mcp_server.helpers import (
    TOOLS,
    HttpServer,
    failed,
    http_session,
    memories,
    ok,
    snapshot,
    stdio_session,
    store_url,
)

Connect = Callable[[str], contextlib.AbstractAsyncContextManager[ClientSession]]

# stdio starts a process per session: on Postgres and the Query Engine; HTTP on all three.
CASES = [
    ("postgres", "stdio"),
    ("redis-qe", "stdio"),
    ("postgres", "http"),
    ("redis-qe", "http"),
    ("redis-plain", "http"),
]


@pytest.fixture(scope="module")
def urls() -> dict[str, str]:
    """One store per backend for the module (each test has users of its own)."""
    return {}


@pytest.fixture(scope="module")
def http_servers() -> Iterator[dict[str, HttpServer]]:
    """One HTTP server per store URL, started when first needed."""
    started: dict[str, HttpServer] = {}
    yield started
    for server in started.values():
        server.close()


@pytest.fixture(params=CASES, ids=["-".join(case) for case in CASES])
def case(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def url(case: tuple[str, str], urls: dict[str, str]) -> str:
    backend = case[0]
    if backend not in urls:
        urls[backend] = store_url(backend)
    return urls[backend]


def _server(http_servers: dict[str, HttpServer], url: str) -> HttpServer:
    if url not in http_servers:
        http_servers[url] = HttpServer(url)
    return http_servers[url]


@pytest.fixture
def users() -> Callable[[str], str]:
    """``users(name)``: a user name of this test only (the module's stores are shared)."""
    tag = uuid.uuid4().hex[:6]
    return lambda name: f"{name}-{tag}"


@pytest.fixture
def connect(case: tuple[str, str], url: str, http_servers: dict[str, HttpServer]) -> Connect:
    """``connect(user)``: a session of that user on the transport under test."""
    if case[1] == "stdio":
        return lambda user: stdio_session(url, "--user", user)
    server = _server(http_servers, url)
    return lambda user: http_session(f"{server.base}/users/{user}/mcp")


def _of(url: str, user: str) -> list[tuple[tuple[str, ...], str, Any]]:
    """The items of ``user``'s namespace."""
    return [item for item in snapshot(url) if item[0][:2] == ("memories", user)]


async def test_round_trip_every_tier(
    connect: Connect, url: str, users: Callable[[str], str]
) -> None:
    ada = users("ada")
    async with connect(ada) as session:
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        hints = {t.name: t.annotations for t in listed.tools}
        assert hints["search_memory"] and hints["search_memory"].readOnlyHint
        assert hints["forget_memory"] and hints["forget_memory"].destructiveHint

        saved = await ok(session, "save_memory", content="Ada drinks green tea")
        [hit] = await memories(session)
        assert hit["text"] == "Ada drinks green tea" and hit["id"] in saved
        updated = await ok(session, "update_memory", id=hit["id"], content="Ada drinks black tea")
        [now] = await memories(session)
        assert now["text"] == "Ada drinks black tea" and now["id"] in updated
        assert now["id"] != hit["id"]
        # the history is kept: as of before the update, the old text held
        then = json.loads(
            await ok(session, "search_memory", query="tea", as_of=now["valid_from"][:-1] + "0Z")
        )
        assert [h["text"] for h in then] in (["Ada drinks green tea"], ["Ada drinks black tea"])
        await ok(session, "forget_memory", id=now["id"])
        assert await memories(session) == []

        await ok(session, "record_episode", text="Fixed the flaky deploy", success=True)
        episodes = json.loads(await ok(session, "search_episodes", query="deploy"))
        assert [e["text"] for e in episodes] == ["Fixed the flaky deploy"]

        first = json.loads(await ok(session, "read_instructions", name="tone"))
        assert first["version"] == 0
        await ok(session, "update_instructions", name="tone", text="Be brief.", expected_version=0)
        read = json.loads(await ok(session, "read_instructions", name="tone"))
        assert (read["version"], read["text"]) == (1, "Be brief.")
    tiers = {ns[2] for ns, _, _ in _of(url, ada)}
    assert tiers == {"semantic", "episodic", "procedural"}


async def test_bad_input_is_a_tool_error_and_changes_nothing(
    connect: Connect, url: str, users: Callable[[str], str]
) -> None:
    async with connect(users("ada")) as session:
        await ok(session, "save_memory", content="Ada drinks green tea")
        await ok(session, "update_instructions", name="tone", text="Be brief.")
        [hit] = await memories(session)
        before = snapshot(url)
        errors = [
            await failed(session, "save_memory", content="   "),
            await failed(session, "save_memory"),
            await failed(session, "update_memory", id="no-such-id", content="x"),
            await failed(session, "update_memory", id=hit["id"]),
            await failed(session, "forget_memory", id="no-such-id"),
            await failed(session, "search_memory", query="tea", limit=0),
            await failed(session, "search_memory", query="tea", filter={"$or": []}),
            await failed(session, "search_memory", query="tea", as_of="yesterday"),
            await failed(session, "search_episodes", limit="many"),
            await failed(session, "update_instructions", name="tone", text="x", expected_version=0),
        ]
        assert "content" in errors[0] and "no memory with id" in errors[2]
        assert "limit" in errors[5] and "version 1" in errors[9]
        assert snapshot(url) == before
        # the session still works after the errors
        assert [h["text"] for h in await memories(session)] == ["Ada drinks green tea"]


async def test_one_user_never_sees_or_changes_another(
    connect: Connect, url: str, users: Callable[[str], str]
) -> None:
    async with connect(users("ada")) as ada, connect(users("bob")) as bob:
        await ok(ada, "save_memory", content="Ada drinks green tea")
        await ok(ada, "update_instructions", name="tone", text="Be brief.")
        [hit] = await memories(ada)
        assert await memories(bob) == []
        assert json.loads(await ok(bob, "read_instructions", name="tone"))["version"] == 0
        assert "no memory with id" in await failed(bob, "update_memory", id=hit["id"], content="x")
        assert "no memory with id" in await failed(bob, "forget_memory", id=hit["id"])
        await ok(bob, "save_memory", content="Bob drinks coffee")
        assert [h["text"] for h in await memories(ada)] == ["Ada drinks green tea"]
        assert [h["text"] for h in await memories(bob, "coffee")] == ["Bob drinks coffee"]
    assert {ns[1] for ns, _, _ in snapshot(url) if ns[0] == "memories"} >= {
        users("ada"),
        users("bob"),
    }
    assert all(len(_of(url, users(name))) > 0 for name in ("ada", "bob"))


async def test_http_user_from_header_and_path_agree(
    http_servers: dict[str, HttpServer], urls: dict[str, str], users: Callable[[str], str]
) -> None:
    url = urls.setdefault("redis-qe", store_url("redis-qe"))
    base = _server(http_servers, url).base
    ada = users("ada")
    async with http_session(f"{base}/mcp", {"X-Memory-User": ada}) as session:
        await ok(session, "save_memory", content="Ada drinks green tea")
    async with http_session(f"{base}/users/{ada}/mcp") as same:
        assert [h["text"] for h in await memories(same)] == ["Ada drinks green tea"]
    async with http_session(f"{base}/mcp") as nobody:
        assert "no user" in await failed(nobody, "search_memory", query="tea")
    async with http_session(f"{base}/users/a.b/mcp") as bad:
        assert "unusable user name" in await failed(bad, "search_memory", query="tea")


@contextlib.asynccontextmanager
async def _fixed(url: str) -> AsyncIterator[ClientSession]:
    async with stdio_session(url, "--namespace", "team/notes") as session:
        yield session


async def test_a_fixed_namespace_serves_every_client() -> None:
    url = store_url("postgres")
    async with _fixed(url) as one:
        await ok(one, "save_memory", content="The team drinks tea")
    async with _fixed(url) as two:
        assert [h["text"] for h in await memories(two)] == ["The team drinks tea"]
    assert {ns[:2] for ns, _, _ in snapshot(url)} == {("team", "notes")}


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A directory the embedded server's user can reach (pytest's tmp_path is root's only); the
    server is stopped afterwards (fast shutdown) if the last CLI process did not get to stop it
    before its client killed it."""
    path = Path(tempfile.mkdtemp(prefix="langmem-test-mcp-"))
    yield path
    pid_file = path / "pg" / "postmaster.pid"
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + 30
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    shutil.rmtree(path, ignore_errors=True)


async def test_stdio_on_the_embedded_store(data_dir: Path) -> None:
    """The CLI's default store kind: an embedded PostgreSQL in a data directory, started by the
    server process; the memories outlive the session."""
    url = f"embedded:{data_dir / 'pg'}"
    async with stdio_session(url, "--user", "ada") as session:
        await ok(session, "save_memory", content="Ada drinks green tea")
    async with stdio_session(url, "--user", "ada") as session:
        assert [h["text"] for h in await memories(session)] == ["Ada drinks green tea"]
