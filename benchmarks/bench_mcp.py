"""What a memory tool call costs over MCP on stdio beyond the work the tool itself does (issue #29:
"a few milliseconds at most").

Side by side in one run, on the same store and namespace, interleaved call by call:

- ``tool``: the LangChain memory tool run in this process (``ainvoke``): the store calls and the
  tool's own logic, the baseline;
- ``mcp stdio``: the same tool through ``langmem-adapters mcp`` as a stdio subprocess, called with
  the ``mcp`` SDK's client (JSON-RPC over pipes, argument validation, the tool error mapping);
- ``store``: the bare ``store.search`` of the semantic namespace, for scale;
- ``pipe``: a line of the same size to an echo subprocess and back: the bare cost of a stdio round
  trip between two processes on this machine, the floor under any stdio transport.

The overhead is the median of ``mcp stdio - tool`` over the pairs timed back to back. Operations:
``read_instructions`` (one read: the MCP layer stands out), ``search_memory`` over N saved memories
and ``save_memory``. Servers: ``--url`` (a store URL, as the CLI takes), else
``LANGMEM_BENCH_REDIS_URL`` / ``LANGMEM_BENCH_POSTGRES_DSN``, else ones started from the test
wheels; a fresh prefix each run.

Examples::

    python benchmarks/bench_mcp.py --quick          # CI: Redis, 300 memories, 40 calls each
    python benchmarks/bench_mcp.py --backend postgres --calls 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from asyncio.subprocess import PIPE
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from langmem_adapters.cli.locations import open_store
from langmem_adapters.settings import parse_embed, parse_location
from langmem_adapters.tools import (
    create_manage_memory_tool,
    create_memory_tools,
    create_search_memory_tool,
)

USER = "bench"
ROOT = ("memories", USER)
TOPICS = ["tea", "coffee", "trains", "cats", "jazz", "hiking", "python", "chess", "rain", "maps"]


def store_url(backend: str, given: str | None) -> str:
    """The store URL to benchmark, with a fresh prefix."""
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    if given:
        base = given
    elif backend == "redis":
        base = os.environ.get("LANGMEM_BENCH_REDIS_URL") or _test_server("redis")
    else:
        base = os.environ.get("LANGMEM_BENCH_POSTGRES_DSN") or _test_server("postgres")
    option = "prefix" if base.startswith(("redis://", "rediss://")) else "table_prefix"
    return f"{base}{'&' if '?' in base else '?'}{option}={prefix}"


def _test_server(backend: str) -> str:
    from tests import servers

    return servers.redis_url(modules=True) if backend == "redis" else servers.postgres_dsn()


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def _timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> None:
    start = time.perf_counter()
    await call()
    into.append(time.perf_counter() - start)


@dataclass(frozen=True)
class Row:
    """Medians over the timed calls of one operation, in ms; ``overhead`` is the median of each
    call's ``mcp - tool`` (the pair timed back to back)."""

    operation: str
    store: float
    tool: float
    mcp: float
    overhead: float
    pipe: float


# A bare stdio round trip between two processes, the floor under any stdio transport.
ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()"


async def _echo(process: asyncio.subprocess.Process, args: dict[str, Any]) -> None:
    """One JSON-RPC-sized line to the echo process and back."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "params": args}).encode() + b"\n")
    await process.stdin.drain()
    await process.stdout.readline()


async def run(url: str, memories: int, calls: int) -> list[Row]:
    """One row per operation, ``calls`` timed calls each (after 5 to warm up)."""
    index = parse_embed("hash:64", ["text"])  # the CLI's default index
    with open_store(parse_location(url), index, create=True) as store:
        manage = create_manage_memory_tool(ROOT, store=store)
        search = create_search_memory_tool(ROOT, store=store)
        procedural = {
            t.name: t for t in create_memory_tools(ROOT, tiers=["procedural"], store=store)
        }
        reader, writer = procedural["read_instructions"], procedural["update_instructions"]
        for i in range(memories):
            await manage.ainvoke({"content": f"note {i} about {TOPICS[i % len(TOPICS)]}"})
        cli = ["-m", "langmem_adapters", "-q", "mcp", url, "--user", USER]
        params = StdioServerParameters(command=sys.executable, args=cli)
        echo = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ECHO, stdin=PIPE, stdout=PIPE
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            rows = []
            await manage.ainvoke({"content": "warm"})
            await writer.ainvoke({"name": "tone", "text": "Be brief."})
            for name in ("read_instructions", "search_memory", "save_memory"):
                times: dict[str, list[float]] = {"store": [], "tool": [], "mcp": [], "pipe": []}
                tool = {"search_memory": search, "save_memory": manage}.get(name, reader)
                for i in range(calls + 5):  # the first 5 of each warm up
                    topic = TOPICS[i % len(TOPICS)]
                    args: dict[str, Any] = {
                        "read_instructions": {"name": "tone"},
                        "search_memory": {"query": f"what about {topic}"},
                        "save_memory": {"content": f"new note {i} on {topic}"},
                    }[name]
                    sample = times if i >= 5 else {k: [] for k in times}
                    await _timed(
                        lambda t=topic: asyncio.to_thread(
                            store.search, (*ROOT, "semantic"), query=t, limit=10
                        ),
                        sample["store"],
                    )
                    await _timed(lambda a=args, t=tool: t.ainvoke(a), sample["tool"])
                    await _timed(lambda a=args, n=name: session.call_tool(n, a), sample["mcp"])
                    await _timed(lambda a=args: _echo(echo, a), sample["pipe"])
                rows.append(
                    Row(
                        name,
                        _ms(times["store"]),
                        _ms(times["tool"]),
                        _ms(times["mcp"]),
                        _ms([m - t for m, t in zip(times["mcp"], times["tool"])]),
                        _ms(times["pipe"]),
                    )
                )
        assert echo.stdin is not None
        echo.stdin.close()
        await echo.wait()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["redis", "postgres"], default="redis")
    parser.add_argument("--url", help="store URL (default: see the module docstring)")
    parser.add_argument("--memories", type=int, help="memories saved first (default 1000)")
    parser.add_argument("--calls", type=int, help="timed calls per operation (default 300)")
    parser.add_argument("--quick", action="store_true", help="CI: 300 memories, 40 calls")
    args = parser.parse_args()
    memories = args.memories or (300 if args.quick else 1000)
    calls = args.calls or (40 if args.quick else 300)
    url = store_url(args.backend, args.url)
    rows = asyncio.run(run(url, memories, calls))
    print(
        f"MCP over stdio vs the same tool in process ({args.backend}, {memories} memories, "
        f"median of {calls} calls each, ms)"
    )
    print(
        f"{'operation':<18}{'store':>9}{'tool':>9}{'mcp stdio':>11}{'overhead':>10}{'ratio':>8}"
        f"{'pipe':>8}"
    )
    for row in rows:
        print(
            f"{row.operation:<18}{row.store:>9.2f}{row.tool:>9.2f}{row.mcp:>11.2f}"
            f"{row.overhead:>10.2f}{row.mcp / row.tool:>8.2f}{row.pipe:>8.2f}"
        )


if __name__ == "__main__":
    main()
