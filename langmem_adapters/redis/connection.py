"""The wire level of the Redis stores: executing one ``Round`` on a redis-py client.

A round's commands go out together (one write, or one pipeline) and every reply is read; a script
the server has forgotten (NOSCRIPT: it did not run, as on a replica just promoted by Sentinel) is
loaded and called again. With ``wait_replicas`` a round that writes ends with ``WAIT`` on the same
connection (see :mod:`langmem_adapters.redis.durability`). A lost connection
becomes :class:`~langmem_adapters.errors.StoreConnectionError` (see :func:`lost`), any other error
of redis-py (an error reply: out of memory, a read-only replica, ...)
:class:`~langmem_adapters.errors.ServerRefusedError` (see :func:`ours`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from typing import Any

import redis
import redis.asyncio as aredis
import redis.asyncio.sentinel as asentinel
import redis.sentinel
from redis.exceptions import ClusterDownError, MaxConnectionsError, NoScriptError, ResponseError
from redis.utils import HIREDIS_AVAILABLE

from langmem_adapters.errors import (
    SearchTimeoutError,
    ServerRefusedError,
    StoreConnectionError,
    first_line,
)
from langmem_adapters.redis.durability import ReplicaWait
from langmem_adapters.redis.scripts import SCRIPTS, SHA, Call, Round

__all__ = ["LOST", "AsyncWire", "Wire", "lost", "ours", "pool_limit"]

# Connection lost or refused, timed out, server loading its data (BusyLoadingError is a ConnectionError),
# cluster slots not served: the server did not run the command, or ran a whole script call.
LOST = (redis.ConnectionError, redis.TimeoutError, ClusterDownError)


def lost(exc: Exception) -> StoreConnectionError:
    """The error a store raises for one of ``LOST``: what happened, and what it means for the batch."""
    # redis-py before 6 raises a plain ConnectionError with this message instead
    if isinstance(exc, MaxConnectionsError) or str(exc) == "Too many connections":
        return StoreConnectionError(
            f"the Redis client's connection pool is exhausted ({exc}); nothing was sent; give the client "
            "a BlockingConnectionPool (as from_conn_string and a URL do) or a larger max_connections"
        )
    if isinstance(exc, (redis.sentinel.MasterNotFoundError, asentinel.MasterNotFoundError)):
        return StoreConnectionError(
            f"the Redis sentinels know no reachable primary now ({exc}), as while a failover is under "
            "way; nothing was sent; the store asks them again on its next call"
        )
    if isinstance(exc, redis.AuthenticationError):
        return StoreConnectionError(f"Redis refused the credentials ({exc}); nothing was sent")
    if "refused" in str(exc).lower():
        return StoreConnectionError(
            f"cannot connect to Redis ({exc}); nothing was sent; the store reconnects on its next call"
        )
    return StoreConnectionError(
        f"lost the connection to Redis during a batch ({type(exc).__name__}: {exc}); its writes run in one "
        "Lua script call (one per namespace on a Redis Cluster), so they were applied whole or not at all; "
        "the store reconnects on its next call"
    )


def _timed_out(exc: ResponseError) -> str | None:
    """What the server said when a search ran past its query timeout, else None: ``SEARCHTIMEOUT``
    from our scripts (``ON_TIMEOUT return``, ``lua/ft_search.lua``), or the server's own error
    (``ON_TIMEOUT fail``); without the script's name and line the server appends."""
    said = first_line(exc)
    if not said.startswith(("SEARCHTIMEOUT ", "Timeout limit was reached")):
        return None
    return said.removeprefix("SEARCHTIMEOUT ").split(" script: ")[0]


def ours(exc: BaseException | None) -> Exception | None:
    """This package's error for an exception of redis-py (``None`` for any other): a lost
    connection (:func:`lost`), a search past the server's query timeout (:func:`_timed_out`), or
    ``ServerRefusedError`` naming the error the server answered."""
    if isinstance(exc, LOST):
        return lost(exc)
    if isinstance(exc, ResponseError) and (why := _timed_out(exc)) is not None:
        return SearchTimeoutError(why)
    if isinstance(exc, redis.RedisError):
        return ServerRefusedError(
            f"Redis refused the request ({type(exc).__name__}: {first_line(exc)})"
        )
    return None


def _args(call: Call) -> tuple[Any, ...]:
    if call.script is None:
        return call.args
    return ("EVALSHA", SHA[call.script], len(call.keys), *call.keys, *call.args)


def _packed(conn: Any, calls: list[Call]) -> list[bytes]:
    """The round's commands in RESP for ``conn.send_packed_command``.

    redis-py's public ``Connection.pack_commands`` writes them, except where our own writer
    (:func:`_pack_text`) is faster and writes the same bytes: no hiredis (redis-py then packs in pure
    Python) and a connection whose ``encoder`` names its text encoding. Side by side
    (``benchmarks/redis_wire.py``, redis-py 8.1 without hiredis, two runs on a loaded 2-core
    machine): a batch of 100 puts took 1.34-1.50x the client CPU with ``pack_commands``, a single
    put 1.02-1.09x, a get 1.05-1.42x.
    """
    encoder = getattr(conn, "encoder", None)
    if HIREDIS_AVAILABLE or not _names_encoding(encoder):
        return list(conn.pack_commands([_args(call) for call in calls]))
    return [_pack_text(calls, encoder)]


def _names_encoding(encoder: Any) -> bool:
    """Whether ``encoder`` says how text is encoded (redis-py's does), so our writer can match it."""
    return isinstance(getattr(encoder, "encoding", None), str) and isinstance(
        getattr(encoder, "encoding_errors", None), str
    )


def _pack_text(calls: list[Call], encoder: Any) -> bytes:
    """redis-py's pure-Python RESP writer for these argument types (str, bytes, int, float), in
    less than half its time: a put's arguments cost it ~40 us."""
    enc, errors = encoder.encoding, encoder.encoding_errors
    parts: list[bytes] = []
    text: list[str] = []  # built as text and encoded once; bytes arguments are spliced in
    for call in calls:
        args = _args(call)
        text.append(f"*{len(args)}\r\n")
        for a in args:
            if type(a) is bytes:
                text.append(f"${len(a)}\r\n")
                parts += ("".join(text).encode(enc, errors), a)
                text = ["\r\n"]
            else:
                s = a if type(a) is str else str(a)
                n = len(s) if s.isascii() else len(s.encode(enc, errors))
                text.append(f"${n}\r\n{s}\r\n")
    parts.append("".join(text).encode(enc, errors))
    return b"".join(parts)


def _checkout(pool: Any) -> Any:
    """A connection from ``pool``: redis-py before 5.3 requires a command name, which later
    versions deprecate (any name works; it picks nothing on a single server)."""
    if _NAME_REQUIRED.get(type(pool)) is None:
        param = inspect.signature(pool.get_connection).parameters.get("command_name")
        _NAME_REQUIRED[type(pool)] = param is not None and param.default is param.empty
    return pool.get_connection("_") if _NAME_REQUIRED[type(pool)] else pool.get_connection()


_NAME_REQUIRED: dict[type, bool] = {}


def _stale(conn: Any) -> bool:
    """Whether a kept connection has unread data or a closed socket (as the pool checks on checkout);
    ``can_read`` connects a disconnected one first, as the next command would."""
    try:
        return bool(conn.can_read())
    except (redis.ConnectionError, OSError):
        return True


def _reply(conn: Any) -> Any:
    try:
        return conn.read_response()
    except ResponseError as exc:
        return exc


def _outcome(request: Round, results: list[Any]) -> list[Any]:
    if request.check:
        for r in results:
            if isinstance(r, Exception):
                raise r
    return results


def _missing_scripts(request: Round, results: list[Any]) -> dict[int, Call]:
    """The script calls that failed with NOSCRIPT, by position: they did not run and are safe to
    resend (in a round of their own, with a WAIT, if any, after them)."""
    return {
        i: call
        for i, (r, call) in enumerate(zip(results, request.calls))
        if isinstance(r, NoScriptError)
    }


def _pipeline(client: Any, request: Round) -> Any:
    """The round's commands on a redis-py pipeline, replies (errors as values) from ``execute``."""
    pipe = client.pipeline(transaction=False)
    for call in request.calls:
        pipe.execute_command(*_args(call))
    return pipe.execute(raise_on_error=False)


class Wire:
    """Executes rounds for a blocking store.

    On a single server this talks to a pooled connection directly: redis-py's pipeline costs more
    than the round trip itself (side by side, ``benchmarks/redis_wire.py``: the pipeline took
    1.22-1.85x our client CPU on puts, gets, batches and searches, two runs, both modes). It keeps
    one connection for whichever thread gets it first (a checkout from the pool each round took
    1.10-1.44x the client CPU of a get); a thread that finds it busy, or a store on a small or
    blocking pool (where keeping one would starve the client's other users), checks one out per
    call. Cluster and single-connection clients use a pipeline.
    """

    def __init__(self, client: Any, cluster: bool, wait: ReplicaWait | None = None) -> None:
        self.client = client
        self.cluster = cluster
        self.wait = wait
        pool = getattr(client, "connection_pool", None)
        max_connections = getattr(pool, "max_connections", 0)
        self._keep = (
            not isinstance(pool, redis.BlockingConnectionPool)
            and isinstance(max_connections, int)
            and max_connections >= 16
        )
        self._held: Any = None
        self._held_pid = 0
        self._held_lock = threading.Lock()

    def _send(self, request: Round) -> list[Any]:
        """Send a round's commands in one write and read the raw replies (errors as values)."""
        if self.cluster or self.client.connection is not None:
            return _pipeline(self.client, request)
        if not self._keep or not self._held_lock.acquire(blocking=False):
            return self._send_on(_checkout(self.client.connection_pool), request, True)
        try:
            if self._held is not None and self._held_pid == os.getpid() and _stale(self._held):
                self._give_back()  # the server went away: a new checkout reconnects
            if self._held is None or self._held_pid != os.getpid():
                self._held = _checkout(self.client.connection_pool)
                self._held_pid = os.getpid()
            try:
                return self._send_on(self._held, request, False)
            except BaseException:
                self._give_back()  # closed by _send_on; the next round checks one out
                raise
        finally:
            self._held_lock.release()

    def _give_back(self) -> None:
        """Return the kept connection to the pool. A connection reconnects on checkout from the
        pool, which behind Sentinel first asks where the primary is now: a kept connection that
        merely reconnected would go back to the address it had (a dead or demoted primary)."""
        self.client.connection_pool.release(self._held)
        self._held = None

    def _send_on(self, conn: Any, request: Round, release: bool) -> list[Any]:
        """Write the round on ``conn`` and read every reply; a failure closes the connection."""
        try:
            conn.send_packed_command(_packed(conn, request.calls))
            return [_reply(conn) for _ in request.calls]
        except BaseException:
            conn.disconnect()  # replies may be pending: never reuse it
            raise
        finally:
            if release:
                self.client.connection_pool.release(conn)

    def execute(self, request: Round) -> list[Any]:
        """Send a round's commands together, reloading Lua scripts the server has forgotten."""
        results = self._waited(request)
        if missing := _missing_scripts(request, results):
            for script in {call.script for call in missing.values() if call.script}:
                self.client.script_load(SCRIPTS[script])
            again = self._waited(Round(list(missing.values()), request.check))
            for i, reply in zip(missing, again):
                results[i] = reply
        return _outcome(request, results)

    def _waited(self, request: Round) -> list[Any]:
        """The replies to ``request``, sent with the WAIT of ``wait_replicas`` if it writes."""
        if self.wait is None:
            return self._send(request)
        return self.wait.replies(request, self._send(self.wait.round(request)))

    def close(self) -> None:
        """Give back the kept connection (the next round takes one again)."""
        with self._held_lock:
            if self._held is not None and self._held_pid == os.getpid():
                self._give_back()
            self._held = None


def pool_limit(client: Any) -> int | None:
    """How many connections the client's blocking pool, or its Sentinel pool (which fails at once
    when full: redis-py has no blocking one for Sentinel), may open; ``None``: another pool, which
    fails at once when exhausted and says so (see :func:`lost`), or a cluster client."""
    pool = getattr(client, "connection_pool", None)
    limit = getattr(pool, "max_connections", None)
    bounded = isinstance(pool, (aredis.BlockingConnectionPool, asentinel.SentinelConnectionPool))
    return limit if bounded and isinstance(limit, int) and 0 < limit < 2**31 else None


class AsyncWire:
    """Executes rounds for an async store, as a pipeline on its ``redis.asyncio`` client.

    ``slots`` (one per connection of a blocking or Sentinel pool, see :func:`pool_limit`, else
    ``None``) is what the store's sessions hold while a plan runs: plans beyond the pool's size
    queue there, without a deadline, rather than in the pool, whose wait times out (a store made
    from a URL has such a pool) or which fails at once (a Sentinel pool). Queued
    plans do no work until their turn, so 60,000 gathered operations do not starve the event loop
    while the first connections open (their connect timeout would fire).
    """

    def __init__(self, client: aredis.Redis, wait: ReplicaWait | None = None) -> None:
        self.client = client
        self.wait = wait
        limit = pool_limit(client)
        self.slots = asyncio.Semaphore(limit) if limit else None

    async def execute(self, request: Round) -> list[Any]:
        """Send a round's commands together, reloading Lua scripts the server has forgotten."""
        results = await self._waited(request)
        if missing := _missing_scripts(request, results):
            for script in {call.script for call in missing.values() if call.script}:
                await self.client.script_load(SCRIPTS[script])
            again = await self._waited(Round(list(missing.values()), request.check))
            for i, reply in zip(missing, again):
                results[i] = reply
        return _outcome(request, results)

    async def _waited(self, request: Round) -> list[Any]:
        """The replies to ``request``, sent with the WAIT of ``wait_replicas`` if it writes."""
        if self.wait is None:
            return await _pipeline(self.client, request)
        sent = self.wait.round(request)
        return self.wait.replies(request, await _pipeline(self.client, sent))
