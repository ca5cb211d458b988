"""A resumable copy of every item from a source to one of this package's stores.

The copy goes page by page; after each page is restored (atomically, timestamps and expiry kept,
vectors computed for the target's index) a checkpoint file records the source position and the
count so far, so an interrupted or ``limit``-ed run continues where it stopped, without duplicates.
The checkpoint is removed when the copy is complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from langmem_adapters.core.store import PAGE_SIZE
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.transfer.source import Position, Source

__all__ = ["Checkpoint", "MigrationResult", "Progress", "migrate"]

Progress = Callable[[int], None]
"""Called with how many more items are copied: first those copied by earlier runs, then each page."""


@dataclass(frozen=True)
class Checkpoint:
    """Where a migration stands, kept in the JSON file ``path``: the source and target names it
    belongs to, the source position after the last copied page and how many items were copied."""

    path: Path
    source: str = ""
    target: str = ""
    cursor: Position | None = None
    copied: int = 0

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        source: str = "",
        target: str = "",
        *,
        restart: bool = False,
    ) -> Checkpoint:
        """The checkpoint at ``path`` for this source and target, or a fresh one if there is none
        (or ``restart``). Raises ``InvalidArgumentError`` if the file is unreadable, damaged, or
        belongs to another pair."""
        fresh = cls(Path(path), source, target)
        if restart or not fresh.path.exists():
            return fresh
        try:
            state: Any = json.loads(fresh.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidArgumentError(f"unreadable checkpoint {fresh.path} ({exc})") from None
        if (
            not isinstance(state, dict)
            or not isinstance(state.get("copied"), int)
            or not _is_position(state.get("cursor", 0))
            or (state.get("from"), state.get("to")) != (source, target)
        ):
            raise InvalidArgumentError(
                f"checkpoint {fresh.path} belongs to another migration or is damaged"
            )
        return replace(fresh, cursor=state["cursor"], copied=state["copied"])

    def save(self) -> None:
        """Write the file atomically (temp file + rename), so a crash never leaves half of one."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        data = {
            "from": self.source,
            "to": self.target,
            "cursor": self.cursor,
            "copied": self.copied,
        }
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(self.path)


def _is_position(value: Any) -> bool:
    """Whether a checkpoint's cursor is ``null`` or a list of strings, as sources give them."""
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


@dataclass(frozen=True)
class MigrationResult:
    """What one run did: ``copied`` items in all (``resumed`` of them by earlier runs), and whether
    the copy is ``finished`` (else ``limit`` stopped it and the checkpoint holds the position)."""

    copied: int
    resumed: int
    finished: bool

    @property
    def this_run(self) -> int:
        """Items copied by this run."""
        return self.copied - self.resumed


def migrate(
    source: Source,
    target: SyncStore,
    checkpoint: Checkpoint | str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    page_size: int = PAGE_SIZE,
    limit: int | None = None,
) -> MigrationResult:
    """Copy every live item of ``source`` into ``target``, resuming from ``checkpoint`` (a
    :class:`Checkpoint`, or the path of one without source/target names) and saving it after each
    page; stop after ``limit`` items if given. ``progress`` is told how many items are done.

    The run is one :meth:`~langmem_adapters.core.store.SyncStore.bulk_load` of the target: into an
    empty vector table (a new target) the pages go without the ANN index, which is built once when
    the run ends. A run resuming into a target that already holds vectors inserts into its index."""
    if page_size < 1:
        raise InvalidArgumentError(f"page_size must be >= 1, got {page_size}")
    if limit is not None and limit < 1:
        raise InvalidArgumentError(f"limit must be >= 1, got {limit}")
    state = checkpoint if isinstance(checkpoint, Checkpoint) else Checkpoint.load(checkpoint)
    advance = progress or (lambda n: None)
    resumed, this_run = state.copied, 0
    advance(resumed)
    finished = False
    with target.bulk_load():  # an empty target's ANN index is built once, at the end
        while True:
            budget = page_size if limit is None else min(page_size, limit - this_run)
            got = next(source.pages(state.cursor, budget), None)
            if got is None:
                finished = True
                break
            page, position = got
            if page:
                target.restore(page, page_size=len(page))
            this_run += len(page)
            state = replace(state, cursor=position, copied=state.copied + len(page))
            state.save()
            advance(len(page))
            if limit is not None and this_run >= limit:
                finished = next(source.pages(position, 1), None) is None
                break
    if finished:
        state.path.unlink(missing_ok=True)
    return MigrationResult(copied=state.copied, resumed=resumed, finished=finished)
