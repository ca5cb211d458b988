"""How semantic facts are stored: the :class:`Fact` record, its next slot and its closure.

A fact is closed by whatever occupies its next slot (``next_key(fact_id)``): a successor fact or
an end marker. :func:`as_known_at` applies a closure only if it had been recorded by the time
asked about, which is what makes reads bitemporal.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langmem_adapters.memory.records import MemoryRecord, stored_fields
from langmem_adapters.memory.times import fmt_time, from_ms

__all__ = ["Closure", "Fact", "as_known_at", "closure_from", "fact_from", "next_key"]

_NEXT_SLOT = uuid.UUID("5f2b1c52-6f0e-4c8e-9a53-3a4d2b7c9e11")


def next_key(fact_id: str) -> str:
    """Key of the slot that closes ``fact_id``: deterministic, so writers race on one key."""
    return str(uuid.uuid5(_NEXT_SLOT, fact_id))


@dataclass(frozen=True, kw_only=True)
class Fact(MemoryRecord):
    """A fact and its validity window ``[valid_from, valid_to)``; ``valid_to=None`` means still holds.

    ``valid_to`` and ``superseded_by`` reflect what was known at the time of the read (now for
    ``get``/``history``, ``as_of`` for ``recall``). ``score`` is the query similarity in ``recall``.
    """

    valid_from: datetime
    valid_to: datetime | None = None
    lineage_id: str
    supersedes: str | None = None
    superseded_by: str | None = None
    score: float | None = None

    def context_header(self) -> str:
        """Validity window and recording date."""
        until = fmt_time(self.valid_to) if self.valid_to else "now"
        return (
            f"valid {fmt_time(self.valid_from)} to {until}, recorded {fmt_time(self.recorded_at)}"
        )


@dataclass(frozen=True)
class Closure:
    """How a fact ended: when it stopped holding, when that was recorded, and the successor's id
    (``None`` for an end marker)."""

    valid_to_ms: int
    recorded_at_ms: int
    successor: str | None


def fact_from(value: Mapping[str, Any]) -> Fact:
    """The fact stored as ``value``, still open: closures are applied by :func:`as_known_at`."""
    return Fact(
        **stored_fields(value),
        valid_from=from_ms(value["valid_from_ms"]),
        lineage_id=value["lineage_id"],
        supersedes=value.get("supersedes"),
    )


def closure_from(value: Mapping[str, Any]) -> Closure:
    """The closure stored in a next slot: a successor fact or an end marker."""
    if value["kind"] == "fact":
        return Closure(value["valid_from_ms"], value["recorded_at_ms"], value["id"])
    return Closure(value["valid_to_ms"], value["recorded_at_ms"], None)


def as_known_at(fact: Fact, closure: Closure | None, at_ms: int) -> Fact:
    """The fact with its end filled in if that end had been recorded by ``at_ms``."""
    if closure is None or closure.recorded_at_ms > at_ms:
        return fact
    return replace(fact, valid_to=from_ms(closure.valid_to_ms), superseded_by=closure.successor)
