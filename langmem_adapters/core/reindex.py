"""``reindex`` / ``areindex``: re-embed every item of a store with a new embedder (or new fields),
written once for both drivers and both backends.

A backend supplies a :class:`ReindexJob` (its plans: start or resume a shadow generation of vectors,
fill it a page at a time, switch to it atomically); the flow here drives them: it probes the new
embedder's identity, reports progress between pages (each page commits on its own, with its
position, so an interrupted run resumes where it stopped), and after the switch the store uses the
new embedder. Searches keep answering from the old vectors until the switch.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

from langgraph.store.base import ensure_embeddings

from langmem_adapters.core.drive import Steps, adrive, drive
from langmem_adapters.core.identity import Identity, IdentityGuard, probe
from langmem_adapters.core.ops import check_page_size
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = [
    "AsyncReindex",
    "Progress",
    "ReindexJob",
    "SyncReindex",
    "reindex_flow",
    "reindex_target",
]

Progress = Callable[[int, int], None]
"""A progress callback: items re-embedded so far, and the items to re-embed in all."""

Flow = Generator[Steps, Any, int]
"""The reindex flow: yields plans (each run in its own session), is sent their results."""

#: Items per page unless told otherwise.
PAGE_SIZE = 500


class ReindexJob(Protocol):
    """A backend's plans for one reindex into ``target`` (made once the new identity is known)."""

    def start(self) -> Steps:
        """Create the shadow generation, or resume the one an interrupted run left for the same
        target; returns ``(done, total)``."""
        ...

    def page(self, limit: int) -> Steps:
        """Re-embed the next ``limit`` items into the shadow and record the position; returns
        ``(done, total)``, or ``None`` when every item was."""
        ...

    def finish(self) -> Sequence[Callable[[], Steps]]:
        """The plans that end the reindex: the switch (identity and vectors, atomically) and what
        may follow it (dropping the old vectors)."""
        ...

    def switch(self) -> None:
        """Make the store use the new embedder and vectors (after the switch committed)."""
        ...


def reindex_target(
    spec: IndexSpec | None, embed: Any, fields: Sequence[str] | None, page_size: Any
) -> IndexSpec:
    """The index a reindex moves to: the store's, with the new embedder and fields (checked)."""
    if spec is None:
        raise InvalidArgumentError("reindex needs a store with a vector index (index=...)")
    check_page_size(page_size)
    if fields is not None and (
        isinstance(fields, str) or not fields or not all(isinstance(f, str) and f for f in fields)
    ):
        raise InvalidArgumentTypeError(f"fields must be a non-empty list of paths, got {fields!r}")
    embeddings = spec.embeddings if embed is None else ensure_embeddings(embed)
    return dataclasses.replace(
        spec, embeddings=embeddings, fields=tuple(fields) if fields else spec.fields
    )


def reindex_flow(
    guard: IdentityGuard,
    target: IndexSpec,
    new_model: bool,
    make_job: Callable[[IndexSpec, Identity], ReindexJob],
    page_size: int,
    progress: Progress | None,
    retryable: tuple[type[Exception], ...],
) -> Flow:
    """The whole reindex as plans: probe the new embedder (its size learnt when it is a new model),
    start or resume, pages with progress reports, then the switch (retried when the backend rolled
    it back, e.g. a deadlock with a concurrent batch); returns how many items were re-embedded."""
    page_size = check_page_size(page_size)  # within MAX_ROWS: a larger one is one page
    identity: Identity = yield probe(target.embeddings, None if new_model else target.dims)
    job = make_job(dataclasses.replace(target, dims=identity.dims), identity)
    done, total = yield job.start()
    if progress is not None:
        progress(done, max(done, total))
    while (step := (yield job.page(page_size))) is not None:
        done, total = step
        if progress is not None:
            progress(done, max(done, total))
    guard.pending = (identity, job.switch)
    try:
        switch, *after = job.finish()
        for attempt in range(3):
            try:
                yield switch()
                break
            except retryable:
                if attempt == 2:
                    raise
        job.switch()
    finally:
        guard.pending = None
    for plan in after:
        yield plan()
    return done


class SyncReindex:
    """``reindex`` for stores on a blocking client (mixed into ``SyncStore``)."""

    index_spec: IndexSpec | None
    _guard: IdentityGuard
    _retryable: tuple[type[Exception], ...]
    _run: Callable[[Steps], Any]
    _reindex_job: Callable[[IndexSpec, Identity], ReindexJob]

    def reindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = PAGE_SIZE,
        progress: Progress | None = None,
    ) -> int:
        """Re-embed every live item with ``embed`` (an ``Embeddings``, a function, or an
        ``init_embeddings`` string; default: this store's own, e.g. after an
        ``EmbeddingMismatchError``) and ``fields`` (default: the index's), ``page_size`` items at a
        time, beside the old vectors, which keep answering searches; then switch atomically, after
        which this store uses the new embedder. Unchanged text is embedded once. An interrupted run
        resumes when called again with the same embedder and fields. ``progress(done, total)`` is
        called after each page. Returns how many items the pages re-embedded (items written meanwhile
        are re-embedded by the switch as well)."""
        target = reindex_target(self.index_spec, embed, fields, page_size)
        flow = reindex_flow(
            self._guard,
            target,
            embed is not None,
            self._reindex_job,
            page_size,
            progress,
            self._retryable,
        )
        return int(drive(flow, self._run))

    async def areindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = PAGE_SIZE,
        progress: Progress | None = None,
    ) -> int:
        """Async twin of :meth:`reindex` (in a worker thread)."""
        return await asyncio.to_thread(
            self.reindex, embed, fields, page_size=page_size, progress=progress
        )


class AsyncReindex:
    """``areindex`` for stores on an async client (mixed into ``AsyncStore``)."""

    index_spec: IndexSpec | None
    _guard: IdentityGuard
    _retryable: tuple[type[Exception], ...]
    _drive: Callable[[Steps], Any]
    _sync: Callable[[Any], Any]
    _reindex_job: Callable[[IndexSpec, Identity], ReindexJob]

    async def areindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = PAGE_SIZE,
        progress: Progress | None = None,
    ) -> int:
        """Re-embed every live item (see :meth:`SyncReindex.reindex`); returns how many."""
        target = reindex_target(self.index_spec, embed, fields, page_size)
        flow = reindex_flow(
            self._guard,
            target,
            embed is not None,
            self._reindex_job,
            page_size,
            progress,
            self._retryable,
        )
        return int(await adrive(flow, self._drive))

    def reindex(
        self,
        embed: Any = None,
        fields: Sequence[str] | None = None,
        *,
        page_size: int = PAGE_SIZE,
        progress: Progress | None = None,
    ) -> int:
        """Sync twin of :meth:`areindex`, for callers in other threads."""
        return int(self._sync(self.areindex(embed, fields, page_size=page_size, progress=progress)))
