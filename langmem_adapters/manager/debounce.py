"""The debounce rule of the background managers, without I/O or clocks of its own.

Per key (a thread id), a submission replaces the pending job and moves its deadline to ``now +
delay``: a new message within the delay restarts the wait, and the job that runs is always the
latest state. A key whose job is running gets no second concurrent run: a submission meanwhile
waits (as the next pending job) until the run is finished and its own deadline has passed.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["Debouncer", "Job", "check_delay", "job_key", "portable_config"]


@dataclass(frozen=True)
class Job:
    """One deferred manager call: its input and where it runs."""

    input: Any
    config: RunnableConfig
    context: Any
    store: BaseStore | None


def check_delay(delay: object) -> float:
    """A finite, non-negative number of seconds."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise InvalidArgumentTypeError(f"delay must be a number of seconds, got {delay!r}")
    if not math.isfinite(delay) or delay < 0:
        raise InvalidArgumentError(f"delay must be a finite number >= 0, got {delay!r}")
    return float(delay)


def portable_config(config: RunnableConfig | None) -> RunnableConfig:
    """The part of a run's config a later call may use: its ``configurable`` values without
    LangGraph's internal (``__``-prefixed) entries, and none of the run's callbacks."""
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    return {"configurable": {k: v for k, v in configurable.items() if not str(k).startswith("__")}}


def job_key(config: RunnableConfig, fallback: Hashable) -> Hashable:
    """The key a job is debounced under: its thread id, else ``fallback`` (one key per call)."""
    thread = (config.get("configurable") or {}).get("thread_id")
    return ("thread", str(thread)) if thread is not None else ("call", fallback)


class Debouncer:
    """Pending jobs by key with their deadlines, and the keys running (see the module docstring).
    Not thread-safe: its driver holds a lock or runs on one event loop."""

    def __init__(self, delay: float) -> None:
        self.delay = check_delay(delay)
        self._pending: dict[Hashable, tuple[Job, float]] = {}
        self._running: set[Hashable] = set()

    def submit(self, key: Hashable, job: Job, now: float, delay: float | None = None) -> None:
        """Make ``job`` the pending job of ``key``, due ``delay`` seconds from ``now``."""
        wait = self.delay if delay is None else check_delay(delay)
        self._pending[key] = (job, now + wait)

    def cancel(self, key: Hashable) -> bool:
        """Drop the pending job of ``key``; whether there was one (a running job is not stopped)."""
        return self._pending.pop(key, None) is not None

    def cancel_all(self) -> int:
        """Drop every pending job; how many there were."""
        count = len(self._pending)
        self._pending.clear()
        return count

    def take_due(self, now: float) -> list[tuple[Hashable, Job]]:
        """The jobs due by ``now`` whose key is not running; they are marked running."""
        due = [
            key
            for key, (_, deadline) in self._pending.items()
            if deadline <= now and key not in self._running
        ]
        taken = []
        for key in due:
            job, _ = self._pending.pop(key)
            self._running.add(key)
            taken.append((key, job))
        return taken

    def finish(self, key: Hashable) -> None:
        """Mark the run of ``key`` finished."""
        self._running.discard(key)

    def expedite(self) -> None:
        """Make every pending job due now (a flush)."""
        self._pending = {key: (job, -math.inf) for key, (job, _) in self._pending.items()}

    def next_deadline(self) -> float | None:
        """The earliest deadline of a job that could start (its key not running), if any."""
        deadlines = [d for key, (_, d) in self._pending.items() if key not in self._running]
        return min(deadlines) if deadlines else None

    @property
    def pending(self) -> int:
        """How many jobs wait."""
        return len(self._pending)

    @property
    def running(self) -> int:
        """How many jobs run."""
        return len(self._running)

    @property
    def idle(self) -> bool:
        """Nothing pending and nothing running."""
        return not self._pending and not self._running
