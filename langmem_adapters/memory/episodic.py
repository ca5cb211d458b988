"""EpisodicMemory: an append-only log of what happened and how it went.

Episodes live under ``(*root, "episodic")``, keyed by random uuids, with the embedded field
``text``. ``recall`` with a query ranks by a blend of similarity and recency:

    score = (1 - recency_weight) * similarity + recency_weight * 0.5 ** (age / half_life)

where ``age = max(0, now - occurred_at)``, ``similarity`` is the store's vector score (or, on
stores without an index, the share of query words found in the episode), ``half_life`` defaults
to 7 days and ``recency_weight`` to 0.3. On indexed stores the blend re-ranks the
``max(4 * k, 40)`` most similar episodes; on stores without an index it ranks every match. On a
hybrid store (``index={..., "hybrid": True}``) ``similarity`` is the store's fused score divided by
the best fused score possible (``relevance`` in :mod:`langmem_adapters.memory.ranking`), so it
spans 0..1 like a cosine and the recency blend keeps its meaning.

    >>> log = EpisodicMemory(store, namespace=("acme", "user-42"))
    >>> log.record("Refund issued for order 17", outcome="customer happy", success=True)
    >>> log.recall("refund", since=last_week, success=True)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import BaseStore, SearchItem

from langmem_adapters.errors import (
    InvalidMemoryQueryError,
    InvalidMemoryWriteError,
    MemoryTypeError,
)
from langmem_adapters.memory.checks import (
    check_attribution,
    check_json,
    check_k,
    check_metadata,
    check_text,
)
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.memory.matching import lexical_score
from langmem_adapters.memory.ranking import (
    check_diversity,
    check_min_score,
    hybrid_of,
    mmr,
    relevance,
)
from langmem_adapters.memory.records import Attribution, MemoryRecord, stored_fields
from langmem_adapters.memory.tier import MemoryTier, done, search_ranked
from langmem_adapters.memory.times import fmt_time, from_ms, to_ms, utc_now

__all__ = ["Episode", "EpisodicMemory", "blended_score", "episode_from"]


@dataclass(frozen=True, kw_only=True)
class Episode(MemoryRecord):
    """Something that happened at ``occurred_at``, with its outcome; ``score`` is set by ``recall``."""

    occurred_at: datetime
    outcome: str | None = None
    success: bool | None = None
    thread_id: str | None = None
    score: float | None = None

    def context_header(self) -> str:
        """Occurrence date, outcome and success."""
        parts = [f"occurred {fmt_time(self.occurred_at)}"]
        if self.success is not None:
            parts.append("succeeded" if self.success else "failed")
        if self.outcome is not None:
            parts.append(f"outcome {self.outcome!r}")
        return ", ".join(parts)


def blended_score(
    similarity: float, age: timedelta, *, half_life: timedelta, recency_weight: float
) -> float:
    """``(1 - w) * similarity + w * 0.5 ** (age / half_life)``; negative ages count as zero."""
    recency = 0.5 ** (max(age, timedelta(0)) / half_life)
    return (1.0 - recency_weight) * similarity + recency_weight * recency


def _text(episode: Episode) -> str:
    return episode.text


def episode_from(value: Mapping[str, Any]) -> Episode:
    """The episode stored as ``value`` (an ``episodic`` namespace's record)."""
    return Episode(
        **stored_fields(value),
        occurred_at=from_ms(value["occurred_at_ms"]),
        outcome=value.get("outcome"),
        success=value.get("success"),
        thread_id=value.get("thread_id"),
    )


class EpisodicMemory(MemoryTier):
    """Append-only episodes under ``(*namespace, "episodic")``; see the module docstring."""

    _label = "episodic"

    def __init__(
        self,
        store: BaseStore,
        *,
        namespace: Sequence[str],
        half_life: timedelta = timedelta(days=7),
        recency_weight: float = 0.3,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        super().__init__(store, namespace=namespace, clock=clock)
        if not isinstance(half_life, timedelta) or half_life <= timedelta(0):
            raise InvalidMemoryQueryError(
                f"half_life must be a positive timedelta, got {half_life!r}"
            )
        if not 0.0 <= recency_weight <= 1.0:
            raise InvalidMemoryQueryError(
                f"recency_weight must be in [0, 1], got {recency_weight!r}"
            )
        self.half_life = half_life
        self.recency_weight = float(recency_weight)

    def _record(
        self,
        text: str,
        occurred_at: datetime | None,
        outcome: str | None,
        success: bool | None,
        thread_id: str | None,
        attribution: Attribution | None,
        metadata: Mapping[str, Any] | None,
    ) -> Flow[Episode]:
        text = check_text(text)
        now = self._now_ms()
        when = now if occurred_at is None else to_ms(occurred_at, "occurred_at")
        if when > now:
            raise InvalidMemoryWriteError(
                f"occurred_at {from_ms(when).isoformat()} is in the future; episodes record the past"
            )
        if outcome is not None and not isinstance(outcome, str):
            raise MemoryTypeError(f"outcome must be a str or None, got {type(outcome).__name__}")
        if success is not None and not isinstance(success, bool):
            raise MemoryTypeError(f"success must be a bool or None, got {type(success).__name__}")
        if thread_id is not None and not isinstance(thread_id, str):
            raise MemoryTypeError(
                f"thread_id must be a str or None, got {type(thread_id).__name__}"
            )
        check_json([outcome, thread_id], "outcome and thread_id")
        key = str(uuid.uuid4())
        value = {
            "kind": "episode",
            "id": key,
            "text": text,
            "occurred_at_ms": when,
            "recorded_at_ms": now,
            "outcome": outcome,
            "success": success,
            "thread_id": thread_id,
            "attribution": check_attribution(attribution).to_dict(),
            "metadata": check_metadata(metadata),
        }
        yield from call(self.store, "put", self._ns, key, value, ["text"])
        return episode_from(value)

    def _get(self, episode_id: str) -> Flow[Episode | None]:
        if not isinstance(episode_id, str):
            return None
        item = yield from call(self.store, "get", self._ns, episode_id)
        if item is None or item.value.get("kind") != "episode":
            return None
        return episode_from(item.value)

    def _recall(
        self,
        query: str | None,
        since: datetime | None,
        until: datetime | None,
        k: int,
        success: bool | None,
        min_score: float | None,
        diversity: float,
    ) -> Flow[list[Episode]]:
        k = check_k(k)
        floor = check_min_score(min_score)
        diversity = check_diversity(diversity)
        if success is not None and not isinstance(success, bool):
            raise MemoryTypeError(f"success must be a bool or None, got {type(success).__name__}")
        now = self._now_ms()
        low = None if since is None else to_ms(since, "since")
        high = None if until is None else to_ms(until, "until")
        if low is not None and high is not None and low >= high:
            raise InvalidMemoryQueryError("since must be before until")
        window: dict[str, int] = {}
        if low is not None:
            window["$gte"] = low
        if high is not None:
            window["$lt"] = high
        store_filter: dict[str, Any] = {"kind": "episode"}
        if window:
            store_filter["occurred_at_ms"] = window
        if success is not None:
            store_filter["success"] = success

        def keep(item: SearchItem) -> bool:
            value = item.value
            when = value.get("occurred_at_ms")
            return (
                value.get("kind") == "episode"
                and isinstance(when, int)
                and (low is None or when >= low)
                and (high is None or when < high)
                and (success is None or value.get("success") is success)
            )

        pool = max(4 * k, 40)
        found, ranked_by_store = yield from search_ranked(
            self.store,
            self._ns,
            query=query,
            filter=store_filter,
            page_size=pool if query is not None else 200,
            wanted=pool,
            select=lambda items: done([(episode_from(i.value), i.score) for i in items if keep(i)]),
        )
        if query is None:
            episodes = [e for e, _ in found]
            episodes.sort(key=lambda e: (e.occurred_at, e.recorded_at), reverse=True)
            return episodes[:k]
        at = from_ms(now)
        hybrid = hybrid_of(self.store)
        scored = [
            replace(
                episode,
                score=blended_score(
                    relevance(score, hybrid)
                    if ranked_by_store and score is not None
                    else lexical_score(query, episode.text),
                    at - episode.occurred_at,
                    half_life=self.half_life,
                    recency_weight=self.recency_weight,
                ),
            )
            for episode, score in found
        ]
        scored.sort(key=lambda e: (e.score or 0.0, e.occurred_at), reverse=True)
        if floor is not None:
            scored = [e for e in scored if (e.score or 0.0) >= floor]
        return mmr(scored, k, diversity, score=lambda e: max(e.score or 0.0, 0.0), text=_text)

    # ------------------------------------------------------------------ public API

    def record(
        self,
        text: str,
        *,
        occurred_at: datetime | None = None,
        outcome: str | None = None,
        success: bool | None = None,
        thread_id: str | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Episode:
        """Append an episode that happened at ``occurred_at`` (default now; the future is rejected)."""
        return run_flow(
            self._record(text, occurred_at, outcome, success, thread_id, attribution, metadata)
        )

    async def arecord(
        self,
        text: str,
        *,
        occurred_at: datetime | None = None,
        outcome: str | None = None,
        success: bool | None = None,
        thread_id: str | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Episode:
        """Async ``record``."""
        return await arun_flow(
            self._record(text, occurred_at, outcome, success, thread_id, attribution, metadata)
        )

    def get(self, episode_id: str) -> Episode | None:
        """The episode with this id, or ``None`` (also for another tenant's id)."""
        return run_flow(self._get(episode_id))

    async def aget(self, episode_id: str) -> Episode | None:
        """Async ``get``."""
        return await arun_flow(self._get(episode_id))

    def recall(
        self,
        query: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 10,
        success: bool | None = None,
        min_score: float | None = None,
        diversity: float = 0.0,
    ) -> list[Episode]:
        """Up to ``k`` episodes with ``since <= occurred_at < until``, optionally only (un)successful.

        With a query they are ranked by the blended score of the module docstring; without
        one, newest first. With a query, ``min_score`` drops episodes whose blended score is below
        it, and ``diversity`` in [0, 1] picks the ``k`` by maximal marginal relevance from the
        re-ranked pool (0: score only; see :mod:`langmem_adapters.memory.ranking`).
        """
        return run_flow(self._recall(query, since, until, k, success, min_score, diversity))

    async def arecall(
        self,
        query: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 10,
        success: bool | None = None,
        min_score: float | None = None,
        diversity: float = 0.0,
    ) -> list[Episode]:
        """Async ``recall``."""
        return await arun_flow(self._recall(query, since, until, k, success, min_score, diversity))
