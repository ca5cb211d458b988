"""Interoperability with langmem's own tools, which keep ``{"content": ...}`` items directly under
the namespace root: reading them as memories, and migrating one to a fact before changing it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import SearchItem

from langmem_adapters.memory import Attribution, Fact, SemanticMemory
from langmem_adapters.memory.checks import check_filter
from langmem_adapters.memory.flows import Flow, call
from langmem_adapters.memory.matching import lexical_score, matches_filter
from langmem_adapters.memory.tier import done, search_ranked
from langmem_adapters.memory.times import utc_now
from langmem_adapters.tools.env import ToolEnv
from langmem_adapters.tools.values import Hit, aware, to_json

__all__ = ["content_text", "is_langmem_value", "langmem_hits", "migrate_langmem_item"]


def content_text(content: Any) -> str:
    """The text of a langmem item's content (JSON for structured content)."""
    return content if isinstance(content, str) else to_json(content)


def is_langmem_value(value: Any) -> bool:
    """Whether a stored value is a langmem memory: it has ``content`` and none of our ``kind``."""
    return isinstance(value, dict) and "content" in value and "kind" not in value


def migrate_langmem_item(env: ToolEnv, item_id: str) -> Flow[Fact | None]:
    """Record a langmem ``{"content": ...}`` item under ``root`` as a fact; ``None`` if absent.

    The fact is valid and recorded from the item's ``updated_at`` (at least 1 ms in the past, so
    it can be superseded or ended now). The caller removes the root item after closing the fact.
    """
    item = yield from call(env.store, "get", env.root, item_id)
    if item is None or not is_langmem_value(item.value):
        return None
    since = min(aware(item.updated_at), utc_now() - timedelta(milliseconds=1))
    extras = {k: v for k, v in item.value.items() if k != "content"}
    migrated = SemanticMemory(env.store, namespace=env.root, clock=lambda: since)
    fact: Fact = yield from call(
        migrated,
        "remember",
        content_text(item.value["content"]),
        attribution=Attribution(author="langmem", run_id=env.attribution.run_id),
        metadata={**extras, "langmem_id": item_id},
    )
    return fact


def langmem_hits(
    env: ToolEnv,
    query: str | None,
    need: int,
    meta_filter: Mapping[str, Any],
    as_of: datetime | None,
) -> Flow[list[Hit]]:
    """langmem-style items stored directly under ``root`` (see the package docstring)."""
    conditions = check_filter(meta_filter)

    def select(page: list[SearchItem]) -> Flow[list[Hit]]:
        hits: list[Hit] = []
        for item in page:
            if not is_langmem_value(item.value):
                continue
            since = aware(item.updated_at)
            extras = {k: v for k, v in item.value.items() if k != "content"}
            if (as_of is not None and since > as_of) or not matches_filter(extras, conditions):
                continue
            text = content_text(item.value["content"])
            score = item.score
            if query is not None and score is None:
                score = lexical_score(query, text)
            hits.append(Hit(item.key, text, since, None, score))
        return done(hits)

    hits, _ = yield from search_ranked(
        env.store,
        env.root,
        query=query,
        filter={"kind": {"$ne": "fact"}},
        page_size=max(need, 50),
        wanted=need,
        select=select,
    )
    return hits
