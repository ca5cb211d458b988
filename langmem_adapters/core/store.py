"""The backend-independent half of every store: the ``BaseStore`` surface for a blocking and for an
async driver, embedding requests, atomic create and the TTL sweeper.

A backend writes its batch logic once as a plan (a generator that yields requests and returns the
results) and supplies ``_plan`` (build one) and ``_run`` (drive one on its client, sync or async).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    NotProvided,
    Op,
    PutOp,
    Result,
    TTLConfig,
    _ensure_ttl,
    _validate_namespace,
)

from langmem_adapters.core.ttl import AsyncSweeper, Sweeper, check_ttl_config, sweep_interval
from langmem_adapters.core.vectors import IndexSpec

__all__ = ["AsyncStore", "Embed", "Plan", "SyncStore"]

Plan = Generator[Any, Any, Any]


@dataclass(frozen=True)
class Embed:
    """Texts to embed: documents, or search queries (``query=True`` uses ``embed_query``)."""

    texts: list[str]
    query: bool = False


class _Store(BaseStore):
    """Configuration and checks shared by both drivers."""

    supports_ttl: bool = True
    index_spec: IndexSpec | None
    ttl_config: TTLConfig | None
    # Errors after which the whole batch was rolled back and may simply run again (e.g. a deadlock).
    _retryable: tuple[type[Exception], ...] = ()
    _attempts = 3

    @property
    def embeddings(self) -> Embeddings | None:
        """The index's embedding model (``None`` without an index), as on the official stores."""
        return self.index_spec.embeddings if self.index_spec else None

    def _configure(self, index: Mapping[str, Any] | None, ttl: Mapping[str, Any] | None) -> None:
        self.index_spec = IndexSpec.from_config(index) if index is not None else None
        self.index_config = index
        self.ttl_config = check_ttl_config(ttl)

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Plan:
        """The backend's plan for a batch (or for one atomic create)."""
        raise NotImplementedError

    def _if_absent_op(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any, ttl: Any
    ) -> PutOp:
        _validate_namespace(tuple(namespace))
        return PutOp(tuple(namespace), str(key), value, index, _ensure_ttl(self.ttl_config, ttl))

    def _embed(self, request: Embed) -> list[list[float]]:
        assert self.index_spec is not None
        embeddings = self.index_spec.embeddings
        if request.query:
            return [embeddings.embed_query(t) for t in request.texts]
        return embeddings.embed_documents(request.texts)

    async def _aembed(self, request: Embed) -> list[list[float]]:
        assert self.index_spec is not None
        embeddings = self.index_spec.embeddings
        if request.query:
            return list(await asyncio.gather(*(embeddings.aembed_query(t) for t in request.texts)))
        return await embeddings.aembed_documents(request.texts)


class SyncStore(_Store):
    """A store on a blocking client; its async methods run the blocking ones in a worker thread."""

    _sweeper: Sweeper | None = None

    def _run(self, steps: Plan) -> Any:
        raise NotImplementedError

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many went."""
        raise NotImplementedError

    def _run_retrying(self, ops: list[Op], if_absent: bool = False) -> Any:
        for attempt in range(self._attempts):
            try:
                return self._run(self._plan(ops, if_absent=if_absent))
            except self._retryable:
                if attempt == self._attempts - 1:
                    raise

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return self._run_retrying(list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop is never blocked."""
        return await asyncio.to_thread(self.batch, list(ops))

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it.

        An expired item counts as absent. Racing writers get exactly one True.
        """
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(self._run_retrying([op], if_absent=True))

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Async twin of :meth:`put_if_absent`."""
        return await asyncio.to_thread(self.put_if_absent, namespace, key, value, index, ttl=ttl)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep in a daemon thread every interval (argument, else TTLConfig, else 5 minutes); the
        returned future completes when the sweeper stops."""
        if self._sweeper is None:
            interval = sweep_interval(self.ttl_config, sweep_interval_minutes)
            self._sweeper = Sweeper(self.sweep_ttl, interval)
        return self._sweeper.done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return sweeper.stop(timeout) if sweeper else True


class AsyncStore(_Store):
    """A store on an async client; its sync methods work from other threads by running on the
    store's event loop, and raise ``asyncio.InvalidStateError`` on that loop, where they would deadlock."""

    _sweeper: AsyncSweeper | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def _bind_loop(self) -> None:
        """Remember the running loop (if any) that the sync methods will use."""
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    async def _run(self, steps: Plan) -> Any:
        raise NotImplementedError

    async def _drive(self, steps: Plan) -> Any:
        """``_run`` after binding the loop that later sync calls from other threads will use."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        return await self._run(steps)

    async def _run_retrying(self, ops: list[Op], if_absent: bool = False) -> Any:
        for attempt in range(self._attempts):
            try:
                return await self._drive(self._plan(ops, if_absent=if_absent))
            except self._retryable:
                if attempt == self._attempts - 1:
                    raise

    async def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many went."""
        raise NotImplementedError

    def _sync(self, coro: Any) -> Any:
        """Run a coroutine on the store's loop from another thread."""
        name = type(self).__name__
        if self.loop is None:
            coro.close()
            raise asyncio.InvalidStateError(f"{name} has no event loop yet; use the async methods")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            coro.close()
            raise asyncio.InvalidStateError(
                f"Synchronous calls to {name} detected in the main event loop. "
                "Use the async methods (aget, aput, ...) instead."
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops: reads see the state before the batch; its writes apply atomically."""
        return await self._run_retrying(list(ops))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` on the store's event loop, for callers in other threads."""
        return self._sync(self.abatch(list(ops)))

    async def aput_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Create the item only if no live item has this key; True for the one writer that created it."""
        op = self._if_absent_op(namespace, key, value, index, ttl)
        return bool(await self._run_retrying([op], if_absent=True))

    def put_if_absent(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> bool:
        """Sync twin of :meth:`aput_if_absent`, for callers in other threads."""
        return bool(self._sync(self.aput_if_absent(namespace, key, value, index, ttl=ttl)))

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep in an asyncio task every interval (argument, else TTLConfig, else 5 minutes); returns
        the task."""
        if self._sweeper is None:
            interval = sweep_interval(self.ttl_config, sweep_interval_minutes)
            self._sweeper = AsyncSweeper(self.sweep_ttl, interval)
        return self._sweeper.task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; True when it has stopped."""
        sweeper, self._sweeper = self._sweeper, None
        return await sweeper.stop(timeout) if sweeper else True
