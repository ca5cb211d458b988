"""Running a call while the interpreter exits, when every thread pool refuses new work.

``concurrent.futures`` stops taking work before ``atexit`` hooks run, and LangChain's sync paths
may need a pool (``with_structured_output(include_raw=True)`` runs a ``RunnableParallel``). A
runnable's async path needs none: LangChain sends a sync model's or parser's blocking call to the
event loop's default executor, which :func:`run_without_pool` makes one that runs it inline.
:data:`WITHOUT_POOL` tells a ``MemoryManager`` to call its model that way (set by a
``BackgroundManager``'s exit flush).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

__all__ = ["WITHOUT_POOL", "run_without_pool"]

P = ParamSpec("P")
T = TypeVar("T")

#: Set in the worker threads of a ``BackgroundManager`` flushing at interpreter exit: a
#: ``MemoryManager`` then calls its model with :func:`run_without_pool`.
WITHOUT_POOL: ContextVar[bool] = ContextVar("langmem_adapters_without_pool", default=False)


class _InlineExecutor(ThreadPoolExecutor):
    """An executor that runs each call at once in the thread that submits it.

    The default executor of the event loop an exit flush runs on (asyncio takes only a
    ``ThreadPoolExecutor`` there): once ``concurrent.futures``' own exit hook has run, every real
    pool refuses new work, and LangChain runs a sync model's or parser's async path through the
    loop's default executor.
    """

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn`` now; its result or exception in a finished future."""
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the future carries it, as a pool's would
            future.set_exception(exc)
        return future


def run_without_pool(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a new event loop of this thread whose blocking calls run inline: no thread
    pool and no new thread, so it works while the interpreter exits."""
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_InlineExecutor())
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
