"""A loopback proxy that holds every chunk of bytes half a round trip in each direction: what a
search costs when its server is across a network (``conversation_latency.py --rtt``).

Our servers run on this machine and are reached over a Unix socket (a Postgres round trip ~0.05 ms),
where a store's extra round trip costs next to nothing; a managed Postgres or Redis in the same
region is 0.2-1 ms away, farther across regions. The proxy listens on a loopback TCP port, forwards
to the server (its Unix socket or TCP address) and delivers each chunk ``rtt / 2`` after it read
it, each way, in order. It runs as its own process (so the benchmark's interpreter lock is not its
own) with two threads a direction; on this machine's two cores it adds ~0.1 ms to a round trip by
itself (``--rtt 0``), and ``--rtt 0.5`` measured ~0.8 ms (``SELECT 1``, median of 200).

Examples::

    python benchmarks/rtt_proxy.py --listen 6500 --to unix:/tmp/pg/.s.PGSQL.5432 --rtt 0.5

It prints the port it listens on (``--listen 0``: one the system picks) as its first line.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit, urlunsplit

from psycopg.conninfo import conninfo_to_dict, make_conninfo


def _is_redis(server: str) -> bool:
    """Whether ``server`` is a Redis URL (TCP or Unix socket), not a Postgres DSN."""
    return server.startswith(("redis://", "unix://"))


def upstream_of(server: str) -> str:
    """Where a Postgres DSN or a Redis URL points: ``unix:<path>`` or ``<host>:<port>``."""
    if _is_redis(server):
        parts = urlsplit(server)
        if parts.scheme == "unix":
            return f"unix:{parts.path}"
        return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
    info = conninfo_to_dict(server)
    host, port = str(info.get("host") or "/tmp"), str(info.get("port") or 5432)
    return f"unix:{host}/.s.PGSQL.{port}" if host.startswith("/") else f"{host}:{port}"


def through(server: str, port: int) -> str:
    """``server`` (a Postgres DSN or Redis URL) reached at the proxy's loopback ``port``."""
    if _is_redis(server):
        parts = urlsplit(server)
        db = parts.path if parts.scheme == "redis" else ""
        return urlunsplit(("redis", f"127.0.0.1:{port}", db, parts.query, ""))
    return make_conninfo(server, host="127.0.0.1", port=str(port))


@contextmanager
def delayed(server: str, rtt_ms: float) -> Iterator[str]:
    """``server`` behind a proxy process adding ``rtt_ms`` to each round trip, for the block."""
    args = ["--listen", "0", "--to", upstream_of(server), "--rtt", str(rtt_ms)]
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the port it listens on, once it does
        if not line.strip().isdigit():
            raise RuntimeError(f"the delay proxy did not start ({line!r})")
        yield through(server, int(line))
    finally:
        proc.terminate()
        proc.wait()


def _connect(upstream: str) -> socket.socket:
    """A connection to ``upstream`` (``unix:<path>`` or ``<host>:<port>``)."""
    if upstream.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(upstream[len("unix:") :])
        return sock
    host, _, port = upstream.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _forward(src: socket.socket, dst: socket.socket, delay_s: float) -> None:
    """Read ``src`` until it closes; a second thread sends each chunk to ``dst`` ``delay_s`` after
    it was read, in order, then ends ``dst``'s sending side (a failed send ends both)."""
    queue: deque[tuple[float, bytes]] = deque()
    ready = threading.Condition()

    def send() -> None:
        while True:
            with ready:
                ready.wait_for(lambda: bool(queue))
                due, chunk = queue.popleft()
            if not chunk:
                break
            wait = due - time.perf_counter()
            if wait > 0:  # a zero sleep still gives the interpreter away: ~0.1 ms a round trip
                time.sleep(wait)
            try:
                dst.sendall(chunk)
            except OSError:
                with suppress(OSError):
                    src.shutdown(socket.SHUT_RDWR)  # the reader stops too
                break
        with suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send)
    sender.start()
    while True:
        try:
            chunk = src.recv(65536)
        except OSError:
            chunk = b""
        with ready:
            queue.append((time.perf_counter() + delay_s, chunk))
            ready.notify()
        if not chunk:
            break
    sender.join()  # the chunks still held are sent before the sockets close


def _pair(client: socket.socket, upstream: str, delay_s: float) -> None:
    """Forward ``client`` and a new connection to ``upstream`` both ways until both directions
    end, then close both (a server that cannot be reached closes the client at once)."""
    with client:
        try:
            server = _connect(upstream)
        except OSError:
            return
        with server:
            ways = [
                threading.Thread(target=_forward, args=(src, dst, delay_s))
                for src, dst in ((client, server), (server, client))
            ]
            for way in ways:
                way.start()
            for way in ways:
                way.join()


def serve(port: int, upstream: str, rtt_ms: float) -> None:
    """Accept on loopback ``port`` (0: any) forever, each connection forwarded to ``upstream``;
    the port is printed first."""
    delay_s = rtt_ms / 2e3
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        print(listener.getsockname()[1], flush=True)
        while True:
            client, _ = listener.accept()
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_pair, args=(client, upstream, delay_s), daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", type=int, default=0, help="the loopback port (0: any)")
    p.add_argument("--to", required=True, help="unix:<path> or <host>:<port>")
    p.add_argument("--rtt", type=float, default=0.5, help="milliseconds added to a round trip")
    args = p.parse_args(argv)
    serve(args.listen, args.to, args.rtt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
