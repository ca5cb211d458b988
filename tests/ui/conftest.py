"""Fixtures of the memory browser's tests: a seeded store per backend, and the browser served by
uvicorn on a free loopback port in a thread of the test process."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("starlette")

import uvicorn
from langgraph.store.base import BaseStore

from langmem_adapters.ui import create_app
from langmem_adapters.ui.server import bind
from tests.stores import hash_index
from tests.ui.seed import Seeded, seed

UI_BACKENDS = ["postgres", "redis-qe"]


@pytest.fixture(params=UI_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class SeededStore:
    store: BaseStore
    ids: Seeded


@pytest.fixture
def seeded(make_store: Callable[..., BaseStore]) -> SeededStore:
    store = make_store(index=hash_index(), ttl={"refresh_on_read": False})
    return SeededStore(store, seed(store))


@contextlib.contextmanager
def serving(store: BaseStore, **options: Any) -> Iterator[str]:
    """The browser over ``store`` served on a free loopback port; yields its URL. The socket
    listens before the server thread starts, so a client may connect at once."""
    binding = bind("127.0.0.1", 0)
    app = create_app(store, name="test store", allowed_hosts=binding.allowed_hosts, **options)  # type: ignore[arg-type]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [binding.sock]}, daemon=True)
    thread.start()
    try:
        yield binding.url.rstrip("/")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        binding.sock.close()
