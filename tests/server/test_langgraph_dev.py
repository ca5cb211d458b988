"""A real ``langgraph dev`` server (langgraph-cli[inmem]) whose store is our ``generate_store``, driven
through ``langgraph_sdk`` on Postgres and Redis: the store API, a graph run whose node writes memory,
isolation between namespaces, and a start that fails on a bad variable.

The ``langgraph.json`` store entry is read from ``docs/server.md``, so the documented form is the tested
one. Each server runs offline on a free loopback port in its own process group, killed at teardown.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import EmbeddingMismatchError
from langmem_adapters.postgres import PostgresStore
from langmem_adapters.redis import RedisStore
from tests import servers
from tests.server.support import drop_tables, store_url
from tests.servers import free_port

DOCS = Path(__file__).parents[2] / "docs" / "server.md"
START_TIMEOUT = 120.0

GRAPH = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime


class State(TypedDict, total=False):
    user: str
    text: str
    store: str


async def remember(state: State, runtime: Runtime) -> State:
    await runtime.store.aput(("memories", state["user"]), "note", {"text": state["text"]})
    return {"store": type(runtime.store).__name__}


builder = StateGraph(State)
builder.add_node("remember", remember)
builder.add_edge(START, "remember")
builder.add_edge("remember", END)
graph = builder.compile()
"""

STORE_CLASS = {"postgres": "AsyncPostgresStore", "redis": "AsyncRedisStore"}


def _langgraph_cli() -> str:
    """The ``langgraph`` command of this interpreter's environment (else on PATH)."""
    beside = Path(sys.executable).with_name("langgraph")
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    if found is None:
        pytest.skip(
            "the langgraph CLI is missing: pip install 'langgraph-cli[inmem]' (a test extra)"
        )
    return found


def _documented_store_path() -> str:
    """The ``"store": {"path": ...}`` value of the ``langgraph.json`` snippet in docs/server.md."""
    match = re.search(r'"store":\s*\{"path":\s*"([^"]+)"\}', DOCS.read_text())
    assert match, "docs/server.md has no langgraph.json store entry"
    return match.group(1)


def _project(directory: Path, **store: Any) -> Path:
    """A LangGraph project: the graph module and a ``langgraph.json`` using our store (``store``:
    more keys of its store section, such as ``index`` and ``ttl``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "graph.py").write_text(GRAPH)
    config = {
        "dependencies": ["."],
        "graphs": {"agent": "./graph.py:graph"},
        "store": {"path": _documented_store_path(), **store},
    }
    (directory / "langgraph.json").write_text(json.dumps(config))
    return directory


def _server_env(variables: dict[str, str]) -> dict[str, str]:
    """This environment without LANGMEM_* settings, offline (no analytics, no tracing), plus ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGMEM_")}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        **variables,
    )
    return env


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _start(project: Path, variables: dict[str, str]) -> tuple[subprocess.Popen[bytes], str, Path]:
    """Start ``langgraph dev`` in ``project`` on a free port, in its own process group, logging to a
    file; returns the process, its URL and the log."""
    port = free_port()
    log = project / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [_langgraph_cli(), "dev", "--port", str(port), "--no-browser", "--no-reload"],
            cwd=project,
            env=_server_env(variables),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, f"http://127.0.0.1:{port}", log


@contextmanager
def langgraph_dev(project: Path, variables: dict[str, str]) -> Iterator[str]:
    """Run ``langgraph dev`` in ``project`` until it answers ``/ok``; yields its URL."""
    proc, url, log = _start(project, variables)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer in {START_TIMEOUT} s:\n{_tail(log)}")
            time.sleep(0.25)
        yield url
    finally:
        _stop(proc)


@dataclass
class Served:
    """A running server with our store, and a direct handle on the same data to check against."""

    backend: str
    url: str
    prefix: str

    @contextmanager
    def direct(self, index: Any = None) -> Iterator[PostgresStore | RedisStore]:
        """Our sync store on the data the server writes (not through the server)."""
        if self.backend == "postgres":
            with PostgresStore.from_conn_string(
                servers.postgres_dsn(), table_prefix=self.prefix, index=index
            ) as pg:
                yield pg
        else:
            with RedisStore.from_conn_string(
                servers.redis_url(modules=True), prefix=self.prefix, index=index
            ) as rs:
                yield rs


@pytest.fixture(scope="module", params=["postgres", "redis"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    backend = str(request.param)
    _langgraph_cli()
    prefix = f"srv{uuid.uuid4().hex[:10]}"
    location = store_url(backend, prefix)
    project = _project(tmp_path_factory.mktemp(f"langgraph-{backend}"))
    try:
        with langgraph_dev(
            project, {"LANGMEM_STORE_URL": location, "LANGMEM_EMBED": "hash:64"}
        ) as url:
            yield Served(backend, url, prefix)
    finally:
        if backend == "postgres":
            drop_tables(prefix)


@pytest.fixture
async def client(served: Served) -> AsyncIterator[Any]:
    sdk = get_client(url=served.url)
    yield sdk
    await sdk.http.client.aclose()


async def test_store_api_put_get_search_list_delete(served: Served, client: Any) -> None:
    ns = ["users", uuid.uuid4().hex[:8]]
    await client.store.put_item(ns, "tea", {"text": "ada likes green tea", "kind": "fact"})
    await client.store.put_item(ns, "cake", {"text": "ada bakes cake", "kind": "fact"})
    await client.store.put_item(ns, "meeting", {"text": "tea with bob at noon", "kind": "event"})

    item = await client.store.get_item(ns, "tea")
    assert item["namespace"] == ns
    assert item["value"] == {"text": "ada likes green tea", "kind": "fact"}

    found = await client.store.search_items(ns, query="green tea", filter={"kind": "fact"})
    assert [i["key"] for i in found["items"]] == ["tea", "cake"]
    assert found["items"][0]["score"] > found["items"][1]["score"]
    events = await client.store.search_items(ns, filter={"kind": "event"})
    assert [i["key"] for i in events["items"]] == ["meeting"]

    listed = await client.store.list_namespaces(prefix=["users"])
    assert ns in listed["namespaces"]

    await client.store.delete_item(ns, "tea")
    assert await client.store.get_item(ns, "tea") is None
    left = await client.store.search_items(ns, query="green tea")
    assert sorted(i["key"] for i in left["items"]) == ["cake", "meeting"]

    with served.direct() as store:  # the server wrote to our store, not to its in-memory one
        cake = store.get(tuple(ns), "cake")
        assert cake is not None and cake.value == {"text": "ada bakes cake", "kind": "fact"}
        assert store.get(tuple(ns), "tea") is None


async def test_graph_run_writes_memory_through_the_runtime_store(
    served: Served, client: Any
) -> None:
    user = f"u{uuid.uuid4().hex[:8]}"
    output = await client.runs.wait(None, "agent", input={"user": user, "text": "likes jazz"})
    assert output["store"] == STORE_CLASS[served.backend]

    item = await client.store.get_item(["memories", user], "note")
    assert item["value"] == {"text": "likes jazz"}
    found = await client.store.search_items(["memories", user], query="jazz")
    assert [i["key"] for i in found["items"]] == ["note"]
    with served.direct() as store:
        note = store.get(("memories", user), "note")
        assert note is not None and note.value == {"text": "likes jazz"}


async def test_nothing_leaks_between_namespaces(served: Served, client: Any) -> None:
    run = uuid.uuid4().hex[:8]
    # Labels a LIKE pattern, a glob or a prefix match would confuse with each other.
    a, b, c = [run, "t%", "x"], [run, "t_", "x"], [run, "t%a", "x"]
    for ns in (a, b, c):
        await client.store.put_item(ns, "k", {"text": f"secret of {ns[1]}", "owner": ns[1]})

    for ns in (a, b, c):
        assert (await client.store.get_item(ns, "k"))["value"]["owner"] == ns[1]
        found = await client.store.search_items(ns, query="secret")
        assert [i["value"]["owner"] for i in found["items"]] == [ns[1]]
        listed = await client.store.list_namespaces(prefix=ns[:2])
        assert listed["namespaces"] == [ns]
    everything = await client.store.list_namespaces(prefix=[run])
    assert sorted(map(tuple, everything["namespaces"])) == sorted(map(tuple, (a, b, c)))

    await client.store.delete_item(a, "k")
    assert await client.store.get_item(a, "k") is None
    for ns in (b, c):
        assert (await client.store.get_item(ns, "k"))["value"]["owner"] == ns[1]


def test_a_bad_variable_fails_the_start_naming_it(tmp_path: Path) -> None:
    project = _project(tmp_path / "bad")
    variables = {"LANGMEM_STORE_URL": store_url("redis", "unused"), "LANGMEM_TTL_MINUTES": "soon"}
    proc, _, log = _start(project, variables)
    try:
        code = proc.wait(START_TIMEOUT)
    finally:
        _stop(proc)
    assert code != 0
    assert "ServerConfigError: LANGMEM_TTL_MINUTES must be a positive number" in log.read_text()


@pytest.mark.parametrize("backend", ["postgres", "redis"])
async def test_index_and_ttl_come_from_langgraph_json_alone(backend: str, tmp_path: Path) -> None:
    """No LANGMEM_EMBED or LANGMEM_TTL_MINUTES: the store section's ``index`` (an embedder named as
    langgraph-api names one, here an offline one in a project file; its size; the fields) and
    ``ttl`` reach our store through ``LANGGRAPH_STORE``."""
    _langgraph_cli()
    prefix = f"srv{uuid.uuid4().hex[:10]}"
    project = _project(
        tmp_path / "json",
        index={"embed": "./embeddings.py:embeddings", "dims": 48, "fields": ["text"]},
        ttl={"default_ttl": 45, "refresh_on_read": False, "sweep_interval_minutes": 3},
    )
    (project / "embeddings.py").write_text(
        "from langmem_adapters.embeddings import HashEmbeddings\n\nembeddings = HashEmbeddings(48)\n"
    )
    served = Served(backend, "", prefix)
    try:
        with langgraph_dev(project, {"LANGMEM_STORE_URL": store_url(backend, prefix)}) as url:
            sdk = get_client(url=url)
            try:
                ns = ["docs", uuid.uuid4().hex[:8]]
                await sdk.store.put_item(ns, "tea", {"text": "green tea in the morning", "n": 1})
                await sdk.store.put_item(ns, "jazz", {"text": "jazz records", "n": 2})
                found = await sdk.store.search_items(ns, query="green tea")
                assert found["items"][0]["key"] == "tea"
                assert found["items"][0]["score"] > found["items"][1]["score"]  # ranked: indexed
                user = f"u{uuid.uuid4().hex[:8]}"  # a node's put without a ttl takes the default
                await sdk.runs.wait(None, "agent", input={"user": user, "text": "likes jazz"})
            finally:
                await sdk.http.client.aclose()
        with served.direct() as store:
            (note,) = store.iter_items(("memories", user))
            assert note.ttl_minutes == 45.0
        # The vectors were made by a 48-dimension hash embedder of "text", as langgraph.json says.
        same = {"dims": 48, "embed": HashEmbeddings(48), "fields": ["text"]}
        with served.direct(index=same) as store:
            assert store.search(tuple(ns), query="green tea")[0].key == "tea"
        other = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["text"]}
        with served.direct(index=other) as store, pytest.raises(EmbeddingMismatchError):
            store.search(tuple(ns), query="green tea")
    finally:
        if backend == "postgres":
            drop_tables(prefix)
