"""Flows: the sans-IO generators behind the memory tiers and the memory tools, and how they run.

A flow yields :class:`Call` requests (a public method of a store or a tier, by its sync name) and
receives each result, so one generator serves the sync and the async API: :func:`run_flow` calls
``target.method(...)``, :func:`arun_flow` awaits ``target.amethod(...)``. Both are the package's
one pair of drive loops (:mod:`langmem_adapters.core.drive`): an exception raised by a call is
thrown back into the flow where it yielded.

A store without an atomic create (``put_if_absent``, which this package's stores have) gets a
best-effort fallback: get-then-put under one process-wide lock, which is atomic for
``InMemoryStore`` and for writers sharing this process, but not across processes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.store.base import BaseStore

from langmem_adapters.core.drive import adrive, drive

__all__ = ["Call", "Flow", "arun_flow", "call", "run_flow"]

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """A call of ``target.method(*args, **kwargs)``; the async runner awaits ``target.a<method>``."""

    target: Any
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Flow = Generator[Call, Any, T]
"""A flow returning ``T``: yields calls, is sent their results."""


def call(target: Any, method: str, *args: Any, **kwargs: Any) -> Flow[Any]:
    """Request one call from inside a flow and return its result (``yield from call(...)``)."""
    return (yield Call(target, method, args, kwargs))


#: Serialises the put-if-absent fallback for stores without an atomic create.
_FALLBACK_LOCK = threading.Lock()


def _fallback_put_if_absent(store: BaseStore, *args: Any, **kwargs: Any) -> bool:
    namespace, key = args[0], args[1]
    with _FALLBACK_LOCK:
        if store.get(namespace, key) is not None:
            return False
        store.put(*args, **kwargs)
        return True


async def _afallback_put_if_absent(store: BaseStore, *args: Any, **kwargs: Any) -> bool:
    namespace, key = args[0], args[1]
    # The same thread lock as the sync path, taken without blocking the event loop: another
    # coroutine of this loop may hold it across an await.
    while not _FALLBACK_LOCK.acquire(blocking=False):
        await asyncio.sleep(0.001)
    try:
        if await store.aget(namespace, key) is not None:
            return False
        await store.aput(*args, **kwargs)
        return True
    finally:
        _FALLBACK_LOCK.release()


def _answer(request: Call) -> Any:
    if request.method == "put_if_absent" and not hasattr(request.target, "put_if_absent"):
        return _fallback_put_if_absent(request.target, *request.args, **request.kwargs)
    return getattr(request.target, request.method)(*request.args, **request.kwargs)


async def _aanswer(request: Call) -> Any:
    if request.method == "put_if_absent" and not hasattr(request.target, "aput_if_absent"):
        return await _afallback_put_if_absent(request.target, *request.args, **request.kwargs)
    return await getattr(request.target, "a" + request.method)(*request.args, **request.kwargs)


def run_flow(flow: Flow[T]) -> T:
    """Run a flow on the sync APIs."""
    return drive(flow, _answer)


async def arun_flow(flow: Flow[T]) -> T:
    """Run a flow on the async twins (``aget``, ``arecall``...)."""
    return await adrive(flow, _aanswer)
