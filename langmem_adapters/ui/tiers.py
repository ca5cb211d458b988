"""Readable views of the memory tiers' records (:mod:`langmem_adapters.memory`): a fact's lineage
with what was believed at a time, an instruction's versions with their differences, and a page of
episodes as a timeline. Each reads through the tiers' own public API and record types."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import GetOp, SearchItem

from langmem_adapters.memory import ProceduralMemory, SemanticMemory
from langmem_adapters.memory.episodic import Episode, episode_from
from langmem_adapters.memory.facts import Closure, Fact, closure_from, next_key
from langmem_adapters.memory.procedural import Procedure
from langmem_adapters.memory.times import from_ms, to_ms

__all__ = [
    "FactLineage",
    "VersionDiff",
    "episode_timeline",
    "fact_lineage",
    "tier_of",
    "version_history",
]


def tier_of(namespace: Sequence[str], value: Mapping[str, Any]) -> str | None:
    """Which tier's record a stored value is (``"fact"``, ``"episode"``, ``"version"``), or ``None``."""
    if len(namespace) < 2:
        return None
    kind = value.get("kind")
    label = namespace[-1]
    if label == "semantic" and kind == "fact" and "lineage_id" in value:
        return "fact"
    if label == "episodic" and kind == "episode" and "occurred_at_ms" in value:
        return "episode"
    if label == "procedural" and kind == "version" and "name" in value:
        return "version"
    return None


@dataclass(frozen=True)
class LineageEntry:
    """One version of a fact, its end as known now, and whether it was believed at the as-of time."""

    fact: Fact
    closure: Closure | None
    believed: bool

    @property
    def status(self) -> str:
        """``current``, ``superseded`` or ``ended`` (as known now)."""
        if self.closure is None:
            return "current"
        return "superseded" if self.closure.successor else "ended"

    @property
    def closed_at(self) -> datetime | None:
        """When the fact stopped holding (as known now), or ``None``."""
        return from_ms(self.closure.valid_to_ms) if self.closure else None


@dataclass(frozen=True)
class FactLineage:
    """Every version of a fact's lineage, oldest recorded first, and the time they were read at."""

    entries: list[LineageEntry]
    as_of: datetime | None


def _believed(fact: Fact, closure: Closure | None, at_ms: int) -> bool:
    """Whether ``fact`` was held true at ``at_ms`` by what had been recorded by then (the rule of
    ``SemanticMemory.recall(as_of=...)``)."""
    if (
        to_ms(fact.recorded_at, "recorded_at") > at_ms
        or to_ms(fact.valid_from, "valid_from") > at_ms
    ):
        return False
    return closure is None or closure.recorded_at_ms > at_ms or closure.valid_to_ms > at_ms


def fact_lineage(
    store: Any, namespace: tuple[str, ...], fact_id: str, as_of: datetime | None
) -> FactLineage:
    """The lineage of the fact ``fact_id`` stored under ``namespace`` (``(*root, "semantic")``)."""
    facts = SemanticMemory(store, namespace=namespace[:-1]).history(fact_id)
    slots = store.batch([GetOp(namespace, next_key(f.id)) for f in facts]) if facts else []
    closures = [closure_from(s.value) if s is not None else None for s in slots]
    at_ms = to_ms(as_of, "as_of") if as_of is not None else None
    entries = [
        LineageEntry(f, closure, at_ms is not None and _believed(f, closure, at_ms))
        for f, closure in zip(facts, closures, strict=True)
    ]
    return FactLineage(entries, as_of)


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: ``+`` added, ``-`` removed, `` `` unchanged, ``@`` a hunk header."""

    sign: str
    text: str


@dataclass(frozen=True)
class VersionDiff:
    """A version of an instruction and how its body differs from the version before it."""

    procedure: Procedure
    diff: list[DiffLine]


def _diff(before: str, after: str) -> list[DiffLine]:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    out = []
    for line in list(lines)[2:]:  # after the "---" / "+++" file headers
        sign = "@" if line.startswith("@@") else line[:1]
        out.append(DiffLine(sign, line if sign == "@" else line[1:]))
    return out


def version_history(store: Any, namespace: tuple[str, ...], name: str) -> list[VersionDiff]:
    """Every version of the instruction ``name`` under ``namespace`` (``(*root, "procedural")``),
    oldest first, each with its diff against the previous one (the first against nothing)."""
    versions = ProceduralMemory(store, namespace=namespace[:-1]).history(name)
    out, before = [], ""
    for procedure in versions:
        out.append(VersionDiff(procedure, _diff(before, procedure.body)))
        before = procedure.body
    return out


def episode_timeline(hits: Sequence[SearchItem]) -> list[Episode]:
    """A page of episodes (search results of an ``episodic`` namespace), newest occurrence first."""
    episodes = [episode_from(h.value) for h in hits if tier_of(h.namespace, h.value) == "episode"]
    return sorted(episodes, key=lambda e: e.occurred_at, reverse=True)
