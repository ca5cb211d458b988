"""Deferred extraction: run a :class:`~langmem_adapters.manager.MemoryManager` after a thread
goes quiet, debounced per thread (:mod:`langmem_adapters.manager.debounce`).

:class:`BackgroundManager` runs calls on the sync APIs in worker threads;
:class:`AsyncBackgroundManager` runs them on the async APIs as tasks of the running event loop.
Both take ``submit(messages, config)`` from a graph node (``manager.as_node(executor=...)``) or
anywhere, process the latest messages of each thread once the thread has been quiet for
``delay`` seconds, keep the latest ``keep`` results and errors with counts of all of them (a failed
call never stops the executor, and one running for weeks holds a bounded history), and can
be flushed (run everything pending now and wait) in tests and at shutdown, which flushes by
default, so nothing submitted is lost (a :class:`BackgroundManager` still open when the
interpreter exits is shut down then).

Restarting a wait never cancels anything: the deadline moves. Processing is owned by the
executor, not by the run that submitted it, so cancelling that run (or the task awaiting it)
leaves the deferred call intact; ``shutdown(wait=False)`` / ``ashutdown(wait=False)`` drop what
is pending without raising and wait only for the calls already running.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import queue
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.manager.actions import ManagerResult
from langmem_adapters.manager.debounce import Debouncer, Job, job_key, portable_config
from langmem_adapters.manager.messages import messages_of
from langmem_adapters.manager.without_pool import WITHOUT_POOL

__all__ = ["AsyncBackgroundManager", "BackgroundManager", "Extractor"]


class Extractor(Protocol):
    """What a background manager runs: a :class:`~langmem_adapters.manager.MemoryManager`, or
    anything with its two calls (typed here so this module needs nothing of the manager's)."""

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        store: BaseStore | None = None,
    ) -> ManagerResult: ...

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        store: BaseStore | None = None,
    ) -> ManagerResult: ...


_calls = itertools.count()

#: How many of the latest results and of the latest errors a background manager keeps by default.
KEEP = 1000


class _Ledger:
    """What a background manager keeps of its calls: the latest ``keep`` results and errors, in
    completion order, and how many calls succeeded and failed in all (older ones are dropped, so
    a manager running for weeks holds a bounded history)."""

    def __init__(self, manager: Extractor, delay: float, workers: int, keep: int) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InvalidArgumentError(f"max_workers must be a positive int, got {workers!r}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise InvalidArgumentError(f"keep must be an int >= 0, got {keep!r}")
        self.manager = manager
        self.queue = Debouncer(delay)
        self.workers = workers
        self.keep = keep
        self._results: deque[ManagerResult] = deque(maxlen=keep)
        self._errors: deque[tuple[Hashable, BaseException]] = deque(maxlen=keep)
        #: Calls that returned / raised since the manager was made (kept or not).
        self.succeeded = 0
        self.failed = 0
        self.cancelled = 0
        self.closed = False

    @property
    def results(self) -> list[ManagerResult]:
        """The latest ``keep`` results, oldest first (a copy: workers may be adding to them)."""
        with self.guard:
            return list(self._results)

    @property
    def errors(self) -> list[tuple[Hashable, BaseException]]:
        """The latest ``keep`` failures as ``(call key, exception)``, oldest first (a copy)."""
        with self.guard:
            return list(self._errors)

    def _record(
        self, result: ManagerResult | None, error: BaseException | None, key: Hashable
    ) -> None:
        """Count a finished call and keep its result or error (called under ``guard``)."""
        if error is not None:
            self.failed += 1
            self._errors.append((key, error))
        else:
            self.succeeded += 1
            self._results.append(result)  # type: ignore[arg-type]

    def job(
        self,
        input: Any,
        config: RunnableConfig | None,
        context: Any,
        store: BaseStore | None,
        thread_id: str | None,
    ) -> tuple[Hashable, Job]:
        """The key and the job of one submission (the config reduced to what outlives the run,
        the messages copied as they are now)."""
        if self.closed:
            raise InvalidArgumentError("this background manager was shut down")
        messages = list(messages_of(input))
        kept = portable_config(config)
        if thread_id is not None:
            kept["configurable"]["thread_id"] = str(thread_id)
        return job_key(kept, next(_calls)), Job(messages, kept, context, store)

    def submit(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        store: BaseStore | None = None,
        delay: float | None = None,
        thread_id: str | None = None,
    ) -> None:
        """Schedule processing of ``input`` (the thread's latest messages, or ``{"messages":
        [...]}``) after the quiet delay; ``delay`` overrides the executor's for this submission,
        ``thread_id`` the config's."""
        key, job = self.job(input, config, context, store, thread_id)
        with self.guard:
            self.queue.submit(key, job, self.now(), delay)
            self.wake()

    def cancel(self, thread_id: str) -> bool:
        """Drop the pending call of ``thread_id``; whether there was one."""
        with self.guard:
            return self.queue.cancel(("thread", str(thread_id)))

    @property
    def pending(self) -> int:
        """Calls waiting for their delay."""
        with self.guard:
            return self.queue.pending

    @property
    def guard(self) -> AbstractContextManager[Any]:
        """What serialises access to the queue (a lock, or nothing on one event loop)."""
        return nullcontext()

    def now(self) -> float:
        """The driver's clock, in seconds."""
        return time.monotonic()

    def wake(self) -> None:
        """Tell the scheduler the queue changed (called under ``guard``)."""


class BackgroundManager(_Ledger):
    """Debounced extraction in worker threads, on the sync APIs (see the module docstring)."""

    def __init__(
        self, manager: Extractor, *, delay: float = 5.0, max_workers: int = 4, keep: int = KEEP
    ) -> None:
        self._cond = threading.Condition()
        super().__init__(manager, delay, max_workers, keep)
        # Plain daemon threads, not a ThreadPoolExecutor: those refuse work once the interpreter
        # starts exiting, before the atexit flush runs.
        self._jobs: queue.SimpleQueue[tuple[Hashable, Job] | None] = queue.SimpleQueue()
        self._workers = [
            threading.Thread(target=self._work, name=f"memory-manager-{i}", daemon=True)
            for i in range(max_workers)
        ]
        for worker in self._workers:
            worker.start()
        self._stopping = False
        self._loop = threading.Thread(
            target=self._schedule, name="memory-manager-debounce", daemon=True
        )
        self._loop.start()
        #: Set at interpreter exit: the flushed calls then run with ``WITHOUT_POOL`` set.
        self._exiting = False
        self._exit_hook = _exit_hook(weakref.ref(self))
        atexit.register(self._exit_hook)

    @property
    def guard(self) -> AbstractContextManager[Any]:
        """The condition the scheduler and the workers share."""
        return self._cond

    def wake(self) -> None:
        """Wake the scheduler (the caller holds the condition)."""
        self._cond.notify_all()

    def _schedule(self) -> None:
        """Start due calls; sleep until the next deadline or a submission."""
        with self._cond:
            while True:
                for key, job in self.queue.take_due(time.monotonic()):
                    self._jobs.put((key, job))
                if self._stopping and self.queue.idle:
                    return
                deadline = self.queue.next_deadline()
                self._cond.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        """A worker: run jobs until told to stop (``None``)."""
        while (item := self._jobs.get()) is not None:
            self._run(*item)

    def _run(self, key: Hashable, job: Job) -> None:
        try:
            WITHOUT_POOL.set(self._exiting)  # this worker thread's context (see _exit_hook)
            result = self.manager.invoke(
                job.input, job.config, context=job.context, store=job.store
            )
        except BaseException as exc:  # kept for the caller; the executor keeps running
            with self._cond:
                self._record(None, exc, key)
        else:
            with self._cond:
                self._record(result, None, key)
        finally:
            with self._cond:
                self.queue.finish(key)
                self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending call now and wait until none is pending or running (also calls
        submitted meanwhile); ``False`` if ``timeout`` seconds passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self.queue.idle:
                self.queue.expedite()
                self._cond.notify_all()
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop accepting calls; flush what is pending (``wait=True``) or drop it, then stop."""
        with self._cond:
            self.closed = True
            if not wait:
                self.cancelled += self.queue.cancel_all()
        self.flush()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._loop.join()
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join()
        atexit.unregister(self._exit_hook)

    def _shutdown_at_exit(self) -> None:
        """Shut down from the interpreter's exit, running the flushed calls without a pool."""
        with self._cond:
            self._exiting = True
        self.shutdown()

    def __enter__(self) -> BackgroundManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _exit_hook(ref: weakref.ref[BackgroundManager]) -> Callable[[], None]:
    """The ``atexit`` hook of a background manager: shut it down (flushing) if it is still open.

    ``atexit`` hooks run after ``concurrent.futures`` has stopped taking work, and a model's
    sync path needs a pool (``with_structured_output(include_raw=True)`` runs a
    ``RunnableParallel``). So the workers run the flushed calls with ``WITHOUT_POOL`` set: a
    ``MemoryManager`` then calls its model on the async path, on an event loop whose blocking
    calls run inline (:mod:`langmem_adapters.manager.without_pool`); its store calls stay on the
    sync APIs.
    """

    def hook() -> None:
        executor = ref()
        if executor is not None and not executor.closed:
            executor._shutdown_at_exit()

    return hook


class AsyncBackgroundManager(_Ledger):
    """Debounced extraction as tasks of the running event loop, on the async APIs (see the module
    docstring). Submit from that loop's thread (a coroutine or an async graph node)."""

    def __init__(
        self, manager: Extractor, *, delay: float = 5.0, max_workers: int = 4, keep: int = KEEP
    ) -> None:
        super().__init__(manager, delay, max_workers, keep)
        self._wake = asyncio.Event()
        self._scheduler: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_workers)
        self._settled = asyncio.Event()

    def now(self) -> float:
        """The running loop's clock."""
        return asyncio.get_running_loop().time()

    def wake(self) -> None:
        """Start the scheduler task if it is not running, and wake it."""
        if self._scheduler is None or self._scheduler.done():
            self._scheduler = asyncio.get_running_loop().create_task(self._schedule())
        self._wake.set()

    async def _schedule(self) -> None:
        """Start due calls; wait until the next deadline or a submission; end when idle."""
        loop = asyncio.get_running_loop()
        while not self.queue.idle:
            for key, job in self.queue.take_due(loop.time()):
                task = loop.create_task(self._run(key, job))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            deadline = self.queue.next_deadline()
            self._wake.clear()
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _run(self, key: Hashable, job: Job) -> None:
        try:
            async with self._slots:
                result = await self.manager.ainvoke(
                    job.input, job.config, context=job.context, store=job.store
                )
        except BaseException as exc:  # kept for the caller; the executor keeps running
            self._record(None, exc, key)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            self._record(result, None, key)
        finally:
            self.queue.finish(key)
            self._wake.set()
            self._settled.set()

    async def aflush(self, timeout: float | None = None) -> bool:
        """Run every pending call now and wait until none is pending or running (also calls
        submitted meanwhile); ``False`` if ``timeout`` seconds passed first."""
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        while True:
            self._settled.clear()
            if self.queue.idle:
                return True
            self.queue.expedite()
            self.wake()
            left = None if end is None else end - loop.time()
            try:
                await asyncio.wait_for(self._settled.wait(), left)
            except asyncio.TimeoutError:  # not the builtin before Python 3.11
                return False

    async def ashutdown(self, *, wait: bool = True) -> None:
        """Stop accepting calls; flush what is pending (``wait=True``) or drop it, then stop."""
        self.closed = True
        if not wait:
            self.cancelled += self.queue.cancel_all()
        await self.aflush()
        if self._scheduler is not None:
            self._wake.set()
            await self._scheduler

    async def __aenter__(self) -> AsyncBackgroundManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ashutdown()
