"""Running the browser: bind a socket (loopback and a free port by default), decide whether a token
is required (any non-loopback address), print the URL and serve with uvicorn until interrupted."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

from langmem_adapters.addresses import is_loopback
from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.ui.routes import create_app
from langmem_adapters.ui.security import new_token

__all__ = ["Access", "Binding", "access_for", "bind", "serve"]


@dataclass(frozen=True)
class Binding:
    """A bound listening socket, the URL to open and the token it requires (``None``: none)."""

    sock: socket.socket
    url: str
    token: str | None
    allowed_hosts: frozenset[str] | None


@dataclass(frozen=True)
class Access:
    """Who may use a server bound to an address: the URL to print, the token required (``None``:
    none) and the Host headers accepted (``None``: any)."""

    url: str
    token: str | None
    allowed_hosts: frozenset[str] | None


def access_for(host: str, port: int) -> Access:
    """On loopback: no token, and only loopback Host names (against DNS rebinding). On any other
    address: a random token, carried once by the printed URL, and any Host."""
    shown = f"[{host}]" if ":" in host else host
    if is_loopback(host):
        names = {shown, "localhost", "127.0.0.1", "[::1]"}
        return Access(f"http://{shown}:{port}/", None, frozenset(f"{n}:{port}" for n in names))
    token = new_token()
    return Access(f"http://{shown}:{port}/?token={token}", token, None)


def bind(host: str = "127.0.0.1", port: int = 0) -> Binding:
    """Bind and listen on ``host``:``port`` (0: a free port), with the access rules of that address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections queue from here on, before the server accepts them
    access = access_for(host, sock.getsockname()[1])
    return Binding(sock, access.url, access.token, access.allowed_hosts)


def serve(
    store: SyncStore | AsyncStore,
    *,
    name: str = "store",
    host: str = "127.0.0.1",
    port: int = 0,
    read_only: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the browser over ``store`` until interrupted; ``announce`` gets the URL once bound."""
    import uvicorn

    binding = bind(host, port)
    app = create_app(
        store,
        name=name,
        read_only=read_only,
        token=binding.token,
        allowed_hosts=binding.allowed_hosts,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    announce(binding.url)
    uvicorn.Server(config).run(sockets=[binding.sock])
