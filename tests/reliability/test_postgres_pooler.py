"""PostgresStore behind PgBouncer in transaction mode (Debian's ``pgbouncer``; CI installs it).

Every plan step is one pipeline (one implicit transaction) or an explicit transaction, and session
state is only set transaction-locally, so nothing relies on keeping one server connection.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from langgraph.store.base import PutOp
from psycopg.conninfo import conninfo_to_dict

from langmem_adapters.postgres import PostgresStore
from tests import servers
from tests.stores import hash_index, reset_postgres

PGBOUNCER = shutil.which("pgbouncer") or (
    "/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None
)
pytestmark = pytest.mark.skipif(
    PGBOUNCER is None, reason="pgbouncer is not installed (apt-get install pgbouncer)"
)


@pytest.fixture(scope="module")
def bouncer_dsn() -> Iterator[str]:
    """A transaction-mode PgBouncer on loopback in front of the test server."""
    target = conninfo_to_dict(servers.postgres_dsn())
    work = Path(tempfile.mkdtemp(prefix="langmem-pgbouncer-"))
    port = servers.free_port()
    user = target.get("user", "postgres")
    (work / "users.txt").write_text(f'"{user}" ""\n')
    backend = " ".join(
        f"{k}={target[k]}" for k in ("host", "port", "dbname", "user", "password") if target.get(k)
    )
    (work / "pgbouncer.ini").write_text(
        f"""[databases]
bench = {backend}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {work / "users.txt"}
pool_mode = transaction
default_pool_size = 3
max_client_conn = 50
logfile = {work / "pgbouncer.log"}
pidfile = {work / "pgbouncer.pid"}
"""
    )
    command = [str(PGBOUNCER), str(work / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        shutil.chown(work, "pgserver" if _user_exists("pgserver") else "nobody")
        for f in work.iterdir():
            shutil.chown(f, "pgserver" if _user_exists("pgserver") else "nobody")
        command = [
            "runuser",
            "-u",
            "pgserver" if _user_exists("pgserver") else "nobody",
            "--",
            *command,
        ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dsn = f"postgresql://{user}@127.0.0.1:{port}/bench"
    for _ in range(100):
        try:
            psycopg.connect(dsn, connect_timeout=2).close()
            break
        except psycopg.OperationalError:
            if proc.poll() is not None:
                log = (
                    (work / "pgbouncer.log").read_text()
                    if (work / "pgbouncer.log").exists()
                    else ""
                )
                pytest.fail(f"pgbouncer exited: {log[-2000:]}")
            time.sleep(0.05)
    yield dsn
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(work, ignore_errors=True)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def test_store_works_in_transaction_mode(bouncer_dsn: str) -> None:
    reset_postgres(servers.postgres_dsn())
    # PgBouncer before 1.21 cannot keep prepared statements in transaction mode: turn them off.
    pool = {"max_size": 4, "kwargs": {"prepare_threshold": None}}
    with PostgresStore.from_conn_string(
        bouncer_dsn, index=hash_index(fields=["text"]), pool_config=pool
    ) as store:  # type: ignore[arg-type]
        store.setup()
        store.batch(
            [
                PutOp(("pb", f"u{i % 3}"), f"k{i}", {"text": f"note {i} about tea", "n": i})
                for i in range(30)
            ]
        )

        def work(w: int) -> None:
            # Concurrent clients make PgBouncer hand each transaction to whichever server connection is
            # free: anything kept per session (prepared statements, SET) would break here.
            for _ in range(15):
                assert store.get(("pb", "u1"), "k1").value["n"] == 1  # type: ignore[union-attr]
                assert {i.key for i in store.search(("pb",), filter={"n": {"$gte": 27}})} == {
                    "k27",
                    "k28",
                    "k29",
                }
                assert store.search(("pb", "u0"), query="note 3 about tea", limit=3)[0].key == "k3"
                store.put(("pb", f"w{w}"), "k", {"text": "worker", "n": w})

        with ThreadPoolExecutor(4) as pool_:
            list(pool_.map(work, range(4)))
        assert store.list_namespaces(prefix=("pb",)) == [
            ("pb", n) for n in ("u0", "u1", "u2", "w0", "w1", "w2", "w3")
        ]
        assert store.put_if_absent(("pb", "once"), "k", {"v": 1})
        assert not store.put_if_absent(("pb", "once"), "k", {"v": 2})
        store.put(("pb", "ttl"), "k", {"v": 1}, ttl=0.001)
        time.sleep(0.2)
        assert store.sweep_ttl() == 1
        store.delete(("pb", "once"), "k")
        assert ("pb", "once") not in store.list_namespaces(prefix=("pb",))
