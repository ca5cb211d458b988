"""The optional cap on current facts per namespace, with merge-first compaction (no model call).

When more than ``max_facts`` facts are current after a call, near-duplicates are merged first:
of facts whose word overlap (:func:`~langmem_adapters.manager.dedupe.jaccard`) reaches
``merge_threshold``, the newest is kept and the others are ended. Only if the namespace is still
over the cap are the least recent facts ended until it is at the cap. Ending keeps history in the
default layout, so ``as_of`` reads still see compacted facts.
"""

from __future__ import annotations

from langmem_adapters.manager.actions import MemoryAction, Outcome, Remembered
from langmem_adapters.manager.dedupe import jaccard
from langmem_adapters.manager.layouts import FactLayout
from langmem_adapters.memory import Attribution
from langmem_adapters.memory.flows import Flow

__all__ = ["compact"]

#: How many facts past the cap one compaction reads (a call adds only a few).
_SLACK = 200


def _merges(facts: list[Remembered], threshold: float) -> list[tuple[Remembered, Remembered]]:
    """(older fact, newer fact it merges into) pairs; ``facts`` is newest first."""
    kept: list[Remembered] = []
    merged = []
    for fact in facts:
        into = next((k for k in kept if jaccard(fact.text, k.text) >= threshold), None)
        if into is None:
            kept.append(fact)
        else:
            merged.append((fact, into))
    return merged


def compact(
    facts: FactLayout, *, max_facts: int, merge_threshold: float, attribution: Attribution
) -> Flow[list[Outcome]]:
    """Bring the namespace down to ``max_facts`` current facts; the outcome of every end."""
    current: list[Remembered] = yield from facts.related(None, max_facts + _SLACK)
    if len(current) <= max_facts:
        return []
    outcomes: list[Outcome] = []
    ended: set[str] = set()

    def end(fact: Remembered, why: str) -> Flow[None]:
        yield from facts.end(fact.id, attribution)
        ended.add(fact.id)
        outcomes.append(
            Outcome(MemoryAction(action="end", id=fact.id), "applied", f"compaction: {why}")
        )

    for old, into in _merges(current, merge_threshold):
        if len(current) - len(ended) <= max_facts:
            break
        yield from end(old, f"memory {old.id} merged into {into.id}")
    for old in reversed(current):
        if len(current) - len(ended) <= max_facts:
            break
        if old.id not in ended:
            yield from end(old, f"memory {old.id} was the least recent over the cap of {max_facts}")
    return outcomes
