"""The two loops that run every sans-IO generator of this package: one blocking, one async.

A generator (a store's batch plan, a memory tier's flow, a tool's flow) yields requests and
receives their answers; it does no I/O itself. The caller supplies ``answer``: how to carry out one
request (execute a round on a connection, embed texts, call a store method). A failed request is
thrown back into the generator at the point that yielded it, so a flow may handle it (a tool
turning ``ConcurrentWriteError`` into a message) or let it propagate (a plan, whose caller then sees
the original exception).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["Steps", "adrive", "drive"]

Request = TypeVar("Request")
Answer = TypeVar("Answer")
Result = TypeVar("Result")

Steps = Generator[Any, Any, Result]
"""A sans-IO generator: yields requests, is sent their answers, and returns ``Result``."""


def drive(steps: Generator[Request, Answer, Result], answer: Callable[[Request], Answer]) -> Result:
    """Run ``steps`` to completion, answering each request with ``answer`` (blocking)."""
    try:
        request = next(steps)
        while True:
            try:
                reply = answer(request)
            except Exception as exc:
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value


async def adrive(
    steps: Generator[Request, Answer, Result], answer: Callable[[Request], Awaitable[Answer]]
) -> Result:
    """Run ``steps`` to completion, awaiting ``answer`` for each request."""
    try:
        request = next(steps)
        while True:
            try:
                reply = await answer(request)
            except Exception as exc:
                request = steps.throw(exc)
            else:
                request = steps.send(reply)
    except StopIteration as done:
        return done.value
