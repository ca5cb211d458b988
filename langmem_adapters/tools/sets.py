"""``create_memory_tools``: a coherent set of memory tools over the chosen tiers, one namespace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.tools.builder import build_tool
from langmem_adapters.tools.episodic import EPISODIC_TOOLS
from langmem_adapters.tools.procedural import PROCEDURAL_TOOLS
from langmem_adapters.tools.semantic import create_manage_memory_tool, create_search_memory_tool
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = ["TIERS", "Tier", "create_memory_tools"]

Tier = Literal["semantic", "episodic", "procedural"]

TIERS: tuple[Tier, ...] = ("semantic", "episodic", "procedural")


def create_memory_tools(
    namespace: tuple[str, ...] | str,
    *,
    tiers: Sequence[Tier] = TIERS,
    store: BaseStore | None = None,
) -> list[BaseTool]:
    """A coherent set of memory tools over the chosen tiers, all in one namespace.

    ``semantic``: ``manage_memory``, ``search_memory``; ``episodic``: ``record_episode``,
    ``search_episodes``; ``procedural``: ``read_instructions``, ``update_instructions``.
    """
    chosen = tuple(tiers)
    unknown = [t for t in chosen if t not in TIERS]
    if not chosen or unknown:
        raise InvalidArgumentError(f"tiers must be a non-empty subset of {TIERS}, got {tiers!r}")
    template = NamespaceTemplate(namespace)
    tools: list[BaseTool] = []
    if "semantic" in chosen:
        tools.append(create_manage_memory_tool(namespace, store=store))
        tools.append(create_search_memory_tool(namespace, store=store))
    if "episodic" in chosen:
        tools.extend(build_tool(spec, template=template, store=store) for spec in EPISODIC_TOOLS)
    if "procedural" in chosen:
        tools.extend(build_tool(spec, template=template, store=store) for spec in PROCEDURAL_TOOLS)
    return tools
