"""Where the manager keeps facts: :class:`TierFacts` (``SemanticMemory``, history kept) or
:class:`LangmemFacts` (langmem's store-manager items, ``{"kind": "Memory", "content": {"content":
text}}`` directly under the namespace, updated in place as langmem does).

Both expose the same flows, so validation and application are written once.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any, Protocol

from langgraph.store.base import BaseStore, SearchItem

from langmem_adapters.manager.actions import Remembered
from langmem_adapters.memory import Attribution, Fact, SemanticMemory
from langmem_adapters.memory.flows import Flow, call
from langmem_adapters.memory.times import utc_now

__all__ = ["FactLayout", "LangmemFacts", "TierFacts", "langmem_text"]


class FactLayout(Protocol):
    """The fact operations the manager needs, as flows."""

    keeps_history: bool

    def related(self, query: str | None, k: int) -> Flow[list[Remembered]]:
        """Up to ``k`` current facts, most related to ``query`` first (newest first without one)."""
        ...

    def create(self, text: str, attribution: Attribution) -> Flow[Any]:
        """Store a new fact; returns the written record."""
        ...

    def supersede(self, fact_id: str, text: str, attribution: Attribution) -> Flow[Any]:
        """Replace fact ``fact_id`` by ``text``; returns the new record."""
        ...

    def end(self, fact_id: str, attribution: Attribution) -> Flow[Any]:
        """Stop recalling fact ``fact_id``; returns the closed record (or ``None``)."""
        ...


class TierFacts:
    """Facts of a ``SemanticMemory`` under ``(*root, "semantic")``: a supersede or an end closes
    the old fact at the current time, so ``recall(as_of=...)`` still answers what held before."""

    keeps_history = True

    def __init__(self, store: BaseStore, root: tuple[str, ...]) -> None:
        self.tier = SemanticMemory(store, namespace=root)

    def related(self, query: str | None, k: int) -> Flow[list[Remembered]]:
        """Current facts by the tier's ranking (vector similarity, else word overlap)."""
        facts: list[Fact] = yield from call(self.tier, "recall", query, k=k)
        return [Remembered(f.id, f.text, f.score) for f in facts]

    def create(self, text: str, attribution: Attribution) -> Flow[Fact]:
        """``SemanticMemory.remember``."""
        fact: Fact = yield from call(self.tier, "remember", text, attribution=attribution)
        return fact

    def _closing_time(self, fact_id: str) -> Flow[Any]:
        """Now, or 1 ms after the fact started when it was written this very millisecond."""
        fact: Fact | None = yield from call(self.tier, "get", fact_id)
        now = utc_now()
        return now if fact is None else max(now, fact.valid_from + timedelta(milliseconds=1))

    def supersede(self, fact_id: str, text: str, attribution: Attribution) -> Flow[Fact]:
        """``SemanticMemory.supersede`` (an already closed fact raises ``ConcurrentWriteError``)."""
        at = yield from self._closing_time(fact_id)
        fact: Fact = yield from call(
            self.tier, "supersede", fact_id, text, valid_from=at, attribution=attribution
        )
        return fact

    def end(self, fact_id: str, attribution: Attribution) -> Flow[Fact]:
        """``SemanticMemory.end`` at the current time."""
        at = yield from self._closing_time(fact_id)
        fact: Fact = yield from call(self.tier, "end", fact_id, at, attribution=attribution)
        return fact


def langmem_text(value: Any) -> str | None:
    """The text of a langmem store-manager item value, or ``None`` if it is not one."""
    if not isinstance(value, dict) or "kind" not in value or "content" not in value:
        return None
    content = value["content"]
    if isinstance(content, dict) and isinstance(content.get("content"), str):
        return str(content["content"])
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


class LangmemFacts:
    """langmem's layout: one item per memory under ``root``, rewritten by a supersede and deleted
    by an end (no history: langmem's own manager reads and rewrites these items)."""

    keeps_history = False

    def __init__(self, store: BaseStore, root: tuple[str, ...]) -> None:
        self.store = store
        self.root = root

    def related(self, query: str | None, k: int) -> Flow[list[Remembered]]:
        """The store's search of ``root`` (only items directly under it, in langmem's shape)."""
        hits: list[SearchItem] = yield from call(
            self.store, "search", self.root, query=query, limit=k
        )
        found = []
        for hit in hits:
            text = langmem_text(hit.value)
            if tuple(hit.namespace) == self.root and text is not None:
                found.append(Remembered(hit.key, text, hit.score))
        return found

    def _put(self, key: str, text: str) -> Flow[Remembered]:
        value = {"kind": "Memory", "content": {"content": text}}
        yield from call(self.store, "put", self.root, key, value)
        return Remembered(key, text)

    def create(self, text: str, attribution: Attribution) -> Flow[Remembered]:
        """A new item keyed by a random uuid (langmem keys its items the same way)."""
        return (yield from self._put(str(uuid.uuid4()), text))

    def supersede(self, fact_id: str, text: str, attribution: Attribution) -> Flow[Remembered]:
        """Rewrite the item in place, as langmem's manager does."""
        return (yield from self._put(fact_id, text))

    def end(self, fact_id: str, attribution: Attribution) -> Flow[None]:
        """Delete the item, as langmem's manager does with ``enable_deletes``."""
        yield from call(self.store, "delete", self.root, fact_id)
        return None
