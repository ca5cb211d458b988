"""``reindex`` / ``areindex``: re-embed every item of a store with a new embedder (or new fields),
written once for both drivers and both backends.

A backend supplies a :class:`ReindexJob` (its plans: start or resume a shadow generation of vectors,
fill it a page at a time, switch to it atomically); a store holds a :class:`Reindexer`, whose flow
drives them: it probes the new
embedder's identity, reports progress between pages (each page commits on its own, with its
position, so an interrupted run resumes where it stopped), and after the switch the store uses the
new embedder. Searches keep answering from the old vectors until the switch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

from langgraph.store.base import ensure_embeddings

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.identity import Identity, IdentityGuard, probe
from langmem_adapters.core.ops import check_page_size
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["Progress", "ReindexJob", "Reindexer"]

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


class Reindexer:
    """A store's reindex: made with its identity guard, how to read its index spec, the backend's
    job maker and the errors after which the backend rolled a switch back. :meth:`flow` is the
    whole reindex as plans, for the store to run (blocking or awaiting)."""

    def __init__(
        self,
        guard: IdentityGuard,
        spec: Callable[[], IndexSpec | None],
        job: Callable[[IndexSpec, Identity], ReindexJob],
        retryable: tuple[type[Exception], ...],
    ) -> None:
        self.guard = guard
        self.spec = spec
        self.job = job
        self.retryable = retryable

    def flow(
        self, embed: Any, fields: Sequence[str] | None, page_size: Any, progress: Progress | None
    ) -> Flow:
        """The flow of ``reindex(embed, fields, page_size=, progress=)``, its arguments checked
        before it starts (see :meth:`~langmem_adapters.core.store.SyncStore.reindex`): the store's
        index with the new embedder and fields."""
        spec = self.spec()
        if spec is None:
            raise InvalidArgumentError("reindex needs a store with a vector index (index=...)")
        page_size = check_page_size(page_size)  # within MAX_ROWS: a larger one is one page
        if fields is not None and (
            isinstance(fields, str)
            or not fields
            or not all(isinstance(f, str) and f for f in fields)
        ):
            raise InvalidArgumentTypeError(
                f"fields must be a non-empty list of paths, got {fields!r}"
            )
        embeddings = spec.embeddings if embed is None else ensure_embeddings(embed)
        target = dataclasses.replace(
            spec, embeddings=embeddings, fields=tuple(fields) if fields else spec.fields
        )
        return self._run(target, embed is not None, page_size, progress)

    def _run(
        self, target: IndexSpec, new_model: bool, page_size: int, progress: Progress | None
    ) -> Flow:
        """The whole reindex as plans: probe the new embedder (its size learnt when it is a new
        model), start or resume, pages with progress reports, then the switch (retried when the
        backend rolled it back, e.g. a deadlock with a concurrent batch); returns how many items
        were re-embedded."""
        identity: Identity = yield probe(target.embeddings, None if new_model else target.dims)
        job = self.job(dataclasses.replace(target, dims=identity.dims), identity)
        done, total = yield job.start()
        if progress is not None:
            progress(done, max(done, total))
        while (step := (yield job.page(page_size))) is not None:
            done, total = step
            if progress is not None:
                progress(done, max(done, total))
        self.guard.pending = (identity, job.switch)
        try:
            switch, *after = job.finish()
            for attempt in range(3):
                try:
                    yield switch()
                    break
                except self.retryable:
                    if attempt == 2:
                        raise
            job.switch()
        finally:
            self.guard.pending = None
        for plan in after:
            yield plan()
        return done
