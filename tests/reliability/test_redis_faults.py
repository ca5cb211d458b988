"""Fault injection: restart Redis under a running workload; nothing acknowledged is lost.

The tests start their own server with the Query Engine and an append-only file fsynced on every
write (``--appendonly yes --appendfsync always``), and restart it on the same port and directory:
an in-memory Redis without persistence loses everything on restart by design.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
import redis
from langgraph.store.base import GetOp, PutOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.records import StoredItem
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests import servers
from tests.waiting import await_until, wait_until

BATCH = 6
MODES = ["query_engine", "plain"]


@pytest.fixture(scope="module")
def server() -> Iterator[servers.RedisProcess]:
    srv = servers.RedisProcess(
        servers.redis_command(modules=True),
        ["--save", "", "--appendonly", "yes", "--appendfsync", "always"],
    )
    yield srv
    srv.close()


def _batch(run: str, b: int) -> list[PutOp]:
    """A batch over two namespaces: applied by one script call, so whole or not at all."""
    return [
        PutOp(("fault", run, f"b{b}", str(j % 2)), f"k{j}", {"b": b, "j": j}) for j in range(BATCH)
    ]


def _check(
    server: servers.RedisProcess,
    run: str,
    mode: str,
    acked: list[int],
    failed: list[int],
    before: int,
) -> None:
    """Every acknowledged batch is whole, every failed one whole or absent, and work resumed."""
    assert len(acked) > before, "the store did not recover after the restart"
    present = set()
    with RedisStore.from_conn_string(server.url, prefix=run, mode=mode) as store:  # type: ignore[arg-type]
        for b in acked + failed:
            found = sum(
                r is not None
                for r in store.batch([GetOp(op.namespace, op.key) for op in _batch(run, b)])
            )
            if b in acked:
                assert found == BATCH, f"acknowledged batch {b} lost ({found} of {BATCH} items)"
            else:
                assert found in (0, BATCH), f"batch {b} half-applied ({found} of {BATCH} items)"
            if found:
                present.add(("fault", run, f"b{b}"))
        assert (
            set(store.list_namespaces(prefix=("fault", run), max_depth=3, limit=100_000)) == present
        )


@pytest.mark.parametrize(
    ("mode", "kill"), [("query_engine", False), ("plain", False), ("plain", True)]
)
def test_sync_store_survives_restart(server: servers.RedisProcess, mode: str, kill: bool) -> None:
    run = f"sync{mode[0]}{int(kill)}"
    with RedisStore.from_conn_string(server.url, prefix=run, mode=mode) as store:  # type: ignore[arg-type]
        acked: list[int] = []
        failed: list[int] = []
        restarted = threading.Event()
        before = 0

        def work(offset: int) -> None:
            for b in range(offset, offset + 100_000, 2):
                if restarted.is_set() and len(acked) > before + 20:
                    return
                try:
                    store.batch(_batch(run, b))
                    acked.append(b)
                except StoreConnectionError:
                    failed.append(b)
                    time.sleep(0.05)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        wait_until(lambda: len(acked) >= 20, what="writes acknowledged before the restart")
        server.restart(kill=kill)
        before = len(acked)
        restarted.set()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    _check(server, run, mode, acked, failed, before)


@pytest.mark.parametrize("mode", MODES)
async def test_async_store_survives_restart(server: servers.RedisProcess, mode: str) -> None:
    run = f"async{mode[0]}"
    async with AsyncRedisStore.from_conn_string(server.url, prefix=run, mode=mode) as store:  # type: ignore[arg-type]
        acked: list[int] = []
        failed: list[int] = []
        state = {"restarted": False, "before": 0}

        async def work(offset: int) -> None:
            for b in range(offset, offset + 100_000, 2):
                if state["restarted"] and len(acked) > state["before"] + 20:
                    return
                try:
                    await store.abatch(_batch(run, b))
                    acked.append(b)
                except StoreConnectionError:
                    failed.append(b)
                    await asyncio.sleep(0.05)

        async def fault() -> None:
            await await_until(
                lambda: len(acked) >= 20, what="writes acknowledged before the restart"
            )
            await asyncio.to_thread(server.restart)
            state["before"] = len(acked)
            state["restarted"] = True

        await asyncio.wait_for(asyncio.gather(work(0), work(1), fault()), 90)
    _check(server, run, mode, acked, failed, int(state["before"]))


@pytest.mark.parametrize("mode", MODES)
async def test_connection_error_is_clear_and_store_recovers(
    server: servers.RedisProcess, mode: str
) -> None:
    """While the server is down each call fails with StoreConnectionError; the same stores work again after."""
    prefix = f"down{mode[0]}"
    with RedisStore.from_conn_string(server.url, prefix=prefix, mode=mode) as store:  # type: ignore[arg-type]
        async with AsyncRedisStore.from_conn_string(server.url, prefix=prefix, mode=mode) as astore:  # type: ignore[arg-type]
            store.put(("down",), "k", {"v": 1})
            server.stop()
            try:
                with pytest.raises(
                    StoreConnectionError, match=r"applied whole or not at all|nothing was sent"
                ) as err:
                    store.put(("down",), "k2", {"v": 2})
                assert isinstance(err.value.__cause__, redis.ConnectionError)
                with pytest.raises(StoreConnectionError, match="reconnects on its next call"):
                    await astore.aget(("down",), "k")
            finally:
                server.start()
            assert store.get(("down",), "k2") is None
            store.put(("down",), "k3", {"v": 3})
            assert (await astore.aget(("down",), "k3")) is not None
            assert [i.key for i in await astore.asearch(("down",))] == ["k3", "k"]


def test_loading_and_timeouts_map_to_store_connection_error(
    server: servers.RedisProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisStore(redis.Redis.from_url(server.url), prefix="loading", mode="plain")
    store.setup()
    for exc in (
        redis.BusyLoadingError("Redis is loading the dataset in memory"),
        redis.TimeoutError("Timeout"),
    ):
        # the fault where redis-py meets the socket, through its public send_packed_command
        def fail(
            conn: redis.Connection, command: Any, check_health: bool = True, exc: Exception = exc
        ) -> None:
            raise exc

        monkeypatch.setattr(redis.Connection, "send_packed_command", fail)
        with pytest.raises(StoreConnectionError) as err:
            store.put(("l",), "k", {"v": 1})
        assert err.value.__cause__ is exc
    monkeypatch.undo()
    assert store.get(("l",), "k") is None
    store.client.close()


def _page(run: str, n: int) -> list[StoredItem]:
    at = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
    return [
        StoredItem(("restore", run, str(i % 7)), f"k{i}", {"text": f"item {i}"}, at, at)
        for i in range(n)
    ]


def _kill_while_busy(server: servers.RedisProcess, started: threading.Event) -> None:
    """SIGKILL the server once it stops answering within 20 ms: it is running the script then."""
    probe = redis.Redis.from_url(server.url, socket_timeout=0.02, retry_on_error=[])
    started.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            probe.ping()
        except redis.TimeoutError:
            break
    server.proc.kill()
    server.proc.wait(10)
    probe.close()


@pytest.mark.parametrize("fault", ["half-sent", "server-kill"])
def test_a_restore_page_is_all_or_nothing_when_the_connection_drops(
    server: servers.RedisProcess, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore page runs as one write-script call: a connection dropped while the call is on the
    wire (half of it sent), or the server killed while it runs (its AOF is fsynced on every write),
    leaves the whole page or none of its keys."""
    run = f"r{fault[0]}"
    client = redis.Redis.from_url(server.url, retry_on_error=[])
    store = RedisStore(client, prefix=run, index={"dims": 16, "embed": HashEmbeddings(16)})
    store.setup()
    records = _page(run, 3000)
    started = threading.Event()
    send = redis.Connection.send_packed_command

    def half_sent(conn: redis.Connection, command: Any, check_health: bool = True) -> None:
        data = b"".join(command)
        if b"EVALSHA" in data[:100] and len(data) > 100_000:
            started.set()
            if fault == "half-sent":
                send(conn, [data[: len(data) // 2]], check_health)
                conn.disconnect()
                raise redis.ConnectionError("dropped with half of the script call sent")
        send(conn, command, check_health)

    monkeypatch.setattr(redis.Connection, "send_packed_command", half_sent)
    killer = None
    if fault == "server-kill":
        killer = threading.Thread(target=_kill_while_busy, args=(server, started))
        killer.start()
    with pytest.raises(StoreConnectionError):
        store.restore(records, page_size=len(records))
    monkeypatch.undo()
    if killer is not None:
        killer.join(30)
        server.start()
    client.close()
    with RedisStore.from_conn_string(server.url, prefix=run) as fresh:
        found = list(fresh.iter_items(("restore", run)))
        assert len(found) in (0, 3000), len(found)
        if fault == "half-sent":
            assert found == []
        item_keys = [fresh.keys.item(nsp.join(r.namespace), r.key) for r in records]
        with redis.Redis.from_url(server.url) as admin:
            assert sum(admin.exists(*chunk) for chunk in _chunks(item_keys)) == len(found)
        hits = fresh.search(("restore", run), query="item 5", limit=5000)
        assert len(hits) == len(found)  # no item without its vectors
        assert len(fresh.list_namespaces()) == (7 if found else 0)


def _chunks(keys: list[str], size: int = 500) -> list[list[str]]:
    return [keys[i : i + size] for i in range(0, len(keys), size)]
