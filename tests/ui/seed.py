"""What the memory browser's tests (and its screenshots) browse: the three memory tiers of one
user with known times, a namespace with TTLs, and one with hostile text in keys, values and labels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.store.base import BaseStore

from langmem_adapters.memory import EpisodicMemory, ProceduralMemory, SemanticMemory

ROOT = ("acme", "user-42")
T0 = datetime(2025, 1, 10, 9, 0, tzinfo=timezone.utc)
MOVED = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)

#: Hostile text: any of these executing would set ``window.__pwned`` or open a dialog (alert).
PAYLOADS = {
    "key": "<img src=x onerror=window.__pwned=1>",
    "text": "<script>window.__pwned=2</script>",
    "attr": '"><img src=x onerror="window.__pwned=3">',
    "label": "<svg onload=alert(4)>",  # no "." in a label
}


class Clock:
    """A settable clock for the tiers, so records carry known times."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Seeded:
    """The ids the tests look for."""

    paris: str
    berlin: str
    tea: str
    triage_v3: str


def seed(store: BaseStore) -> Seeded:
    """Write the browsed data into ``store`` (which needs an index for the semantic tier)."""
    clock = Clock(T0)
    facts = SemanticMemory(store, namespace=ROOT, clock=clock)
    paris = facts.remember("Lives in Paris", valid_from=T0)
    tea = facts.remember("Prefers green tea, no sugar", valid_from=T0)
    clock.now = MOVED
    berlin = facts.supersede(paris.id, "Lives in Berlin", valid_from=MOVED)

    log = EpisodicMemory(store, namespace=ROOT, clock=Clock(MOVED + timedelta(days=3)))
    for day, (text, outcome, success) in enumerate(
        [
            ("Asked for a refund of order 17", "refund issued", True),
            ("Reported the app crashing on login", "escalated to engineering", False),
            ("Changed the delivery address to Berlin", "address updated", True),
        ]
    ):
        log.record(text, occurred_at=MOVED + timedelta(days=day), outcome=outcome, success=success)

    skills = ProceduralMemory(store, namespace=ROOT, clock=Clock(T0))
    skills.publish("triage", "Greet the user.\nAsk for the order id first.")
    skills.publish("triage", "Greet the user.\nAsk for the email first.\nCheck the order history.")
    v3 = skills.publish(
        "triage", "Greet the user by name.\nAsk for the email first.\nCheck the order history."
    )

    for i in range(3):
        store.put(("acme", "sessions"), f"session-{i}", {"summary": f"session {i}"}, ttl=90)
    hostile = ("acme", PAYLOADS["label"])
    store.put(hostile, PAYLOADS["key"], {"text": PAYLOADS["text"], "note": PAYLOADS["attr"]})
    store.put(("acme", "user-7", "notes"), "n1", {"text": "likes jazz"})
    return Seeded(paris.id, berlin.id, tea.id, _version_key(store, v3.version))


def _version_key(store: BaseStore, version: int) -> str:
    ns = (*ROOT, "procedural")
    hits = store.search(ns, filter={"kind": "version", "version": version})
    return hits[0].key


def bulk(namespace: tuple[str, ...], n: int, start: int = 0) -> Iterator[Any]:
    """``n`` plain items for a bulk load (``restore`` records)."""
    from langmem_adapters.core.records import StoredItem

    now = datetime.now(timezone.utc)
    for i in range(start, start + n):
        yield StoredItem(
            namespace, f"item-{i:07d}", {"text": f"memory number {i}", "i": i}, now, now
        )
