"""Waiting on a condition instead of sleeping: poll a predicate until it holds or a deadline passes.

A test waits for another thread, task or process only through these (or an Event, or the server's
own readiness), never with a bare sleep that hopes the other side is done by then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: How often a predicate is polled: short, as the other side is usually quick.
POLL = 0.01


def wait_until(
    predicate: Callable[[], T], timeout: float = 30.0, what: str = "", interval: float = POLL
) -> T:
    """The first true value of ``predicate()``, polled every ``interval`` seconds;
    ``AssertionError`` naming ``what`` if it is still false after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate}")
        time.sleep(interval)
    return value


async def await_until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = 30.0,
    what: str = "",
    interval: float = POLL,
) -> T:
    """:func:`wait_until` on an event loop: ``predicate`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what or predicate}")
        await asyncio.sleep(interval)
