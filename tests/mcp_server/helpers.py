"""The MCP server under test: store URLs for each backend (a fresh prefix each), the CLI started as
an HTTP server subprocess, and MCP client sessions over stdio and HTTP (the ``mcp`` SDK's clients)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

try:
    from mcp.client.streamable_http import streamable_http_client
except ImportError:  # an older mcp 1.x
    streamable_http_client = None  # type: ignore[assignment]
from mcp.types import CallToolResult

from langmem_adapters.cli.locations import open_store
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.settings import parse_location
from tests import servers

MCP_BACKENDS = ["postgres", "redis-qe", "redis-plain"]
TOOLS = {
    "save_memory",
    "search_memory",
    "update_memory",
    "forget_memory",
    "record_episode",
    "search_episodes",
    "read_instructions",
    "update_instructions",
}
CLI = [sys.executable, "-m", "langmem_adapters", "-q", "mcp"]


def store_url(backend: str) -> str:
    """A store URL of ``backend`` with a prefix of its own (an empty store)."""
    prefix = f"mcp{uuid.uuid4().hex[:10]}"
    if backend == "postgres":
        dsn = servers.postgres_dsn()
        return f"{dsn}{'&' if '?' in dsn else '?'}table_prefix={prefix}"
    url = servers.redis_url(modules=backend == "redis-qe")
    return f"{url}?prefix={prefix}"


@contextlib.contextmanager
def opened(url: str) -> Iterator[SyncStore]:
    """The store behind ``url``, opened directly (to check what the server wrote)."""
    with open_store(parse_location(url), None, create=True) as store:
        yield store


def snapshot(url: str) -> list[tuple[tuple[str, ...], str, Any]]:
    """Every live item of the store: namespace, key, value."""
    with opened(url) as store:
        return [(i.namespace, i.key, i.value) for i in store.iter_items()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """``langmem-adapters mcp URL --transport http`` on a free loopback port, in a subprocess."""

    def __init__(self, url: str, *extra: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [*CLI, url, "--transport", "http", "--port", str(self.port), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._wait_listening(60)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"the MCP server exited ({self.proc.returncode}): {err}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("the MCP server did not listen in time")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stderr:
            self.proc.stderr.close()


@contextlib.asynccontextmanager
async def http_session(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session over streamable HTTP."""
    async with contextlib.AsyncExitStack() as stack:
        if streamable_http_client is None:  # an older mcp: headers as an argument
            transport = streamablehttp_client(url, headers=headers)
        else:
            client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300))
            await stack.enter_async_context(client)
            transport = streamable_http_client(url, http_client=client)
        read, write, _ = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def stdio_session(url: str, *extra: str) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session with the CLI as a stdio subprocess."""
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], url, *extra])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    """The text of a tool result."""
    return "".join(getattr(block, "text", "") for block in result.content)


async def ok(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call a tool that must succeed; its text."""
    result = await session.call_tool(tool, arguments)
    assert not result.isError, text(result)
    return text(result)


async def failed(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail with a tool error; the error text."""
    result = await session.call_tool(tool, arguments)
    assert result.isError, text(result)
    return text(result)


async def memories(session: ClientSession, query: str = "tea") -> list[dict[str, Any]]:
    """search_memory's hits."""
    return list(json.loads(await ok(session, "search_memory", query=query)))
