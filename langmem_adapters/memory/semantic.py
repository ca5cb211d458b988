"""SemanticMemory: facts with validity windows that are corrected by supersession, never rewritten.

Layout under ``(*root, "semantic")``:

* a fact is an immutable item keyed by a random uuid (``kind="fact"``, embedded field ``text``);
* a fact's *next slot* is the key ``uuid5(fact_id)``. It holds either the successor fact
  (written by ``supersede``) or an ``kind="end"`` marker (written by ``end``). The slot is created
  with an atomic put-if-absent, so of two concurrent supersedes/ends exactly one wins and the
  other raises ``ConcurrentWriteError``.

Reads are bitemporal: ``recall(as_of=t)`` returns facts that were valid at ``t`` according to what
had been recorded by ``t``. A correction recorded today (even one back-dated to last week) leaves
``recall(as_of=last_week)`` unchanged; ``recall(as_of=last_week, known_at=now)`` includes it.

    >>> facts = SemanticMemory(store, namespace=("acme", "user-42"))
    >>> paris = facts.remember("Lives in Paris")
    >>> asked = datetime.now(timezone.utc)
    >>> berlin = facts.supersede(paris.id, "Lives in Berlin")   # later: the user moved
    >>> [f.text for f in facts.recall("where does the user live", as_of=asked)]
    ['Lives in Paris']
    >>> [f.text for f in facts.recall("where does the user live")]
    ['Lives in Berlin']
    >>> [f.text for f in facts.history(berlin.id)]
    ['Lives in Paris', 'Lives in Berlin']
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from langgraph.store.base import GetOp, Item, SearchItem

from langmem_adapters.core.filters import Condition
from langmem_adapters.errors import (
    ConcurrentWriteError,
    InvalidMemoryWriteError,
    RecordNotFoundError,
)
from langmem_adapters.memory.checks import (
    check_attribution,
    check_filter,
    check_k,
    check_metadata,
    check_text,
)
from langmem_adapters.memory.facts import (
    Closure,
    Fact,
    as_known_at,
    closure_from,
    fact_from,
    next_key,
)
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.memory.matching import lexical_score, matches_filter
from langmem_adapters.memory.ranking import (
    check_diversity,
    check_min_score,
    hybrid_of,
    mmr,
    relevance,
)
from langmem_adapters.memory.records import Attribution
from langmem_adapters.memory.tier import MemoryTier, search_all, search_ranked
from langmem_adapters.memory.times import from_ms, to_ms

__all__ = ["Fact", "SemanticMemory"]


def _text(fact: Fact) -> str:
    return fact.text


class SemanticMemory(MemoryTier):
    """Facts with validity windows under ``(*namespace, "semantic")``; see the module docstring."""

    _label = "semantic"

    # ------------------------------------------------------------------ generators

    def _load(self, fact_id: str) -> Flow[tuple[Fact, Closure | None] | None]:
        if not isinstance(fact_id, str):
            return None
        results: list[Item | None] = yield from call(
            self.store, "batch", [GetOp(self._ns, fact_id), GetOp(self._ns, next_key(fact_id))]
        )
        item, slot = results
        if item is None or item.value.get("kind") != "fact" or item.value.get("id") != fact_id:
            return None
        return fact_from(item.value), (closure_from(slot.value) if slot else None)

    def _closures(self, facts: Sequence[Fact]) -> Flow[list[Closure | None]]:
        if not facts:
            return []
        slots: list[Item | None] = yield from call(
            self.store, "batch", [GetOp(self._ns, next_key(f.id)) for f in facts]
        )
        return [closure_from(slot.value) if slot else None for slot in slots]

    def _write_fact(
        self,
        text: str,
        *,
        key: str,
        valid_from_ms: int,
        recorded_at_ms: int,
        lineage_id: str | None,
        supersedes: str | None,
        attribution: Attribution,
        metadata: dict[str, Any],
        atomic: bool,
    ) -> Flow[Fact]:
        value = {
            "kind": "fact",
            "id": key,
            "text": text,
            "valid_from_ms": valid_from_ms,
            "recorded_at_ms": recorded_at_ms,
            "lineage_id": lineage_id or key,
            "supersedes": supersedes,
            "attribution": attribution.to_dict(),
            "metadata": metadata,
        }
        if atomic:
            created = yield from call(self.store, "put_if_absent", self._ns, key, value, ["text"])
            if not created:
                raise ConcurrentWriteError(
                    f"fact {supersedes!r} was superseded or ended by another writer; re-read and retry"
                )
        else:
            yield from call(self.store, "put", self._ns, key, value, ["text"])
        return fact_from(value)

    def _remember(
        self,
        text: str,
        valid_from: datetime | None,
        attribution: Attribution | None,
        metadata: Mapping[str, Any] | None,
    ) -> Flow[Fact]:
        text = check_text(text)
        now = self._now_ms()
        key = str(uuid.uuid4())
        return (
            yield from self._write_fact(
                text,
                key=key,
                valid_from_ms=now if valid_from is None else to_ms(valid_from, "valid_from"),
                recorded_at_ms=now,
                lineage_id=None,
                supersedes=None,
                attribution=check_attribution(attribution),
                metadata=check_metadata(metadata),
                atomic=False,
            )
        )

    def _open_fact(self, fact_id: str) -> Flow[Fact]:
        loaded = yield from self._load(fact_id)
        if loaded is None:
            raise RecordNotFoundError(f"no fact {fact_id!r} in namespace {self.root}")
        fact, closure = loaded
        if closure is not None:
            how = f"superseded by {closure.successor!r}" if closure.successor else "ended"
            raise ConcurrentWriteError(f"fact {fact_id!r} was already {how}; re-read and retry")
        return fact

    def _supersede(
        self,
        fact_id: str,
        text: str,
        valid_from: datetime | None,
        attribution: Attribution | None,
        metadata: Mapping[str, Any] | None,
    ) -> Flow[Fact]:
        text = check_text(text)
        now = self._now_ms()
        start = now if valid_from is None else to_ms(valid_from, "valid_from")
        attribution = check_attribution(attribution)
        new_metadata = None if metadata is None else check_metadata(metadata)
        old = yield from self._open_fact(fact_id)
        if start <= to_ms(old.valid_from, "valid_from"):
            raise InvalidMemoryWriteError(
                f"valid_from {from_ms(start).isoformat()} must be after the superseded fact's "
                f"valid_from {old.valid_from.isoformat()}"
            )
        return (
            yield from self._write_fact(
                text,
                key=next_key(fact_id),
                valid_from_ms=start,
                recorded_at_ms=now,
                lineage_id=old.lineage_id,
                supersedes=fact_id,
                attribution=attribution,
                metadata=old.metadata if new_metadata is None else new_metadata,
                atomic=True,
            )
        )

    def _end(
        self, fact_id: str, valid_to: datetime | None, attribution: Attribution | None
    ) -> Flow[Fact]:
        now = self._now_ms()
        end = now if valid_to is None else to_ms(valid_to, "valid_to")
        attribution = check_attribution(attribution)
        fact = yield from self._open_fact(fact_id)
        if end <= to_ms(fact.valid_from, "valid_from"):
            raise InvalidMemoryWriteError(
                f"valid_to {from_ms(end).isoformat()} must be after the fact's valid_from "
                f"{fact.valid_from.isoformat()}"
            )
        marker = {
            "kind": "end",
            "of": fact_id,
            "valid_to_ms": end,
            "recorded_at_ms": now,
            "attribution": attribution.to_dict(),
        }
        created = yield from call(
            self.store, "put_if_absent", self._ns, next_key(fact_id), marker, False
        )
        if not created:
            raise ConcurrentWriteError(
                f"fact {fact_id!r} was superseded or ended by another writer; re-read and retry"
            )
        return replace(fact, valid_to=from_ms(end))

    def _get(self, fact_id: str) -> Flow[Fact | None]:
        loaded = yield from self._load(fact_id)
        if loaded is None:
            return None
        return as_known_at(loaded[0], loaded[1], self._now_ms())

    def _history(self, fact_id: str) -> Flow[list[Fact]]:
        loaded = yield from self._load(fact_id)
        if loaded is None:
            return []
        items = yield from search_all(
            self.store, self._ns, filter={"kind": "fact", "lineage_id": loaded[0].lineage_id}
        )
        facts = sorted(
            (
                fact_from(i.value)
                for i in items
                if i.value.get("lineage_id") == loaded[0].lineage_id
            ),
            key=lambda f: (f.recorded_at, f.valid_from),
        )
        closures = yield from self._closures(facts)
        now = self._now_ms()
        return [as_known_at(f, c, now) for f, c in zip(facts, closures, strict=True)]

    def _recall(
        self,
        query: str | None,
        as_of: datetime | None,
        known_at: datetime | None,
        k: int,
        filter: Mapping[str, Any] | None,
        min_score: float | None,
        diversity: float,
    ) -> Flow[list[Fact]]:
        k = check_k(k)
        meta_filter = check_filter(filter)
        floor = check_min_score(min_score)
        diversity = check_diversity(diversity)
        # MMR picks k of a larger pool of the most relevant facts.
        pool = max(3 * k, 20) if diversity and query is not None else k
        valid_at = self._now_ms() if as_of is None else to_ms(as_of, "as_of")
        known = valid_at if known_at is None else to_ms(known_at, "known_at")
        store_filter = {
            "kind": "fact",
            "recorded_at_ms": {"$lte": known},
            "valid_from_ms": {"$lte": valid_at},
        }
        found, ranked_by_store = yield from search_ranked(
            self.store,
            self._ns,
            query=query,
            filter=store_filter,
            page_size=max(2 * pool, 50),
            wanted=pool,
            select=lambda items: self._valid_at(items, valid_at, known, meta_filter),
        )
        if query is None:
            found.sort(key=lambda f: (f.valid_from, f.recorded_at), reverse=True)
            return found[:k]
        if not ranked_by_store:
            found = [replace(f, score=lexical_score(query, f.text)) for f in found]
            found.sort(key=lambda f: (f.score or 0.0, f.valid_from), reverse=True)
        elif (hybrid := hybrid_of(self.store)) is not None:
            # A fused score on the 0..1 scale min_score (and the manager's dedupe) are given in.
            found = [
                f if f.score is None else replace(f, score=relevance(f.score, hybrid))
                for f in found
            ]
        found = found[:pool]
        if floor is not None:
            found = [f for f in found if f.score is not None and f.score >= floor]
        return mmr(found, k, diversity, score=lambda f: max(f.score or 0.0, 0.0), text=_text)

    def _valid_at(
        self, items: list[SearchItem], valid_at: int, known: int, meta_filter: Sequence[Condition]
    ) -> Flow[list[Fact]]:
        """Re-check the bitemporal window (and metadata filter) the store search approximated."""
        candidates = [
            (fact_from(i.value), i.score)
            for i in items
            if i.value.get("kind") == "fact"
            and i.value["recorded_at_ms"] <= known
            and i.value["valid_from_ms"] <= valid_at
            and matches_filter(i.value.get("metadata") or {}, meta_filter)
        ]
        closures = yield from self._closures([f for f, _ in candidates])
        return [
            replace(as_known_at(fact, closure, known), score=score)
            for (fact, score), closure in zip(candidates, closures, strict=True)
            if closure is None or closure.recorded_at_ms > known or closure.valid_to_ms > valid_at
        ]

    # ------------------------------------------------------------------ public API

    def remember(
        self,
        text: str,
        *,
        valid_from: datetime | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Fact:
        """Add a fact valid from ``valid_from`` (default now) until it is ended or superseded."""
        return run_flow(self._remember(text, valid_from, attribution, metadata))

    async def aremember(
        self,
        text: str,
        *,
        valid_from: datetime | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Fact:
        """Async ``remember``."""
        return await arun_flow(self._remember(text, valid_from, attribution, metadata))

    def supersede(
        self,
        fact_id: str,
        text: str,
        *,
        valid_from: datetime | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Fact:
        """Close ``fact_id`` at ``valid_from`` (default now) and record ``text`` as its successor.

        The successor inherits the old metadata unless ``metadata`` is given. Raises
        ``RecordNotFoundError`` for an unknown id and ``ConcurrentWriteError`` if the fact was
        already superseded or ended (by a concurrent writer or earlier).
        """
        return run_flow(self._supersede(fact_id, text, valid_from, attribution, metadata))

    async def asupersede(
        self,
        fact_id: str,
        text: str,
        *,
        valid_from: datetime | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Fact:
        """Async ``supersede``."""
        return await arun_flow(self._supersede(fact_id, text, valid_from, attribution, metadata))

    def end(
        self,
        fact_id: str,
        valid_to: datetime | None = None,
        *,
        attribution: Attribution | None = None,
    ) -> Fact:
        """Record that ``fact_id`` stopped holding at ``valid_to`` (default now); returns it closed."""
        return run_flow(self._end(fact_id, valid_to, attribution))

    async def aend(
        self,
        fact_id: str,
        valid_to: datetime | None = None,
        *,
        attribution: Attribution | None = None,
    ) -> Fact:
        """Async ``end``."""
        return await arun_flow(self._end(fact_id, valid_to, attribution))

    def get(self, fact_id: str) -> Fact | None:
        """The fact with this id as known now, or ``None`` (also for another tenant's id)."""
        return run_flow(self._get(fact_id))

    async def aget(self, fact_id: str) -> Fact | None:
        """Async ``get``."""
        return await arun_flow(self._get(fact_id))

    def history(self, fact_id: str) -> list[Fact]:
        """The whole lineage ``fact_id`` belongs to, oldest first; ``[]`` for an unknown id."""
        return run_flow(self._history(fact_id))

    async def ahistory(self, fact_id: str) -> list[Fact]:
        """Async ``history``."""
        return await arun_flow(self._history(fact_id))

    def recall(
        self,
        query: str | None = None,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        k: int = 10,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        diversity: float = 0.0,
    ) -> list[Fact]:
        """Up to ``k`` facts valid at ``as_of`` (default now) per what was recorded by ``known_at``.

        ``known_at`` defaults to ``as_of``, so a correction recorded later never changes a past
        answer; pass ``known_at=now`` to ask what is now believed to have held at ``as_of``.

        With a query, facts are ranked by the store's vector similarity, or by word overlap
        (``lexical_score``) on stores without an index; without one, latest ``valid_from`` first.
        ``filter`` applies to ``metadata``: ``{"topic": "home"}`` or ``{"n": {"$gte": 3}}`` with
        ``$eq $ne $gt $gte $lt $lte``.

        On a hybrid store (``index={..., "hybrid": True}``) the ranking and ``score`` are the
        store's fusion of its lexical and vector rankings. With a query, ``min_score`` drops facts
        scoring below it (compared with ``Fact.score``), and ``diversity`` in [0, 1] re-ranks the
        ``max(3 * k, 20)`` best facts by maximal marginal relevance (0: relevance only; see
        :mod:`langmem_adapters.memory.ranking`).
        """
        return run_flow(self._recall(query, as_of, known_at, k, filter, min_score, diversity))

    async def arecall(
        self,
        query: str | None = None,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        k: int = 10,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        diversity: float = 0.0,
    ) -> list[Fact]:
        """Async ``recall``."""
        return await arun_flow(
            self._recall(query, as_of, known_at, k, filter, min_score, diversity)
        )
