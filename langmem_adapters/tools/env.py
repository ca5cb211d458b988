"""The environment of one tool call: the store, the filled namespace and the attribution of writes,
taken from the tool's own arguments and from the running graph."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.config import get_config
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import get_runtime
from langgraph.store.base import BaseStore

from langmem_adapters.errors import MemoryToolConfigError
from langmem_adapters.memory import Attribution
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = ["ToolEnv", "resolve_env"]


@dataclass(frozen=True)
class ToolEnv:
    """What one tool call runs against: the store, the filled namespace and the attribution."""

    store: BaseStore
    root: tuple[str, ...]
    attribution: Attribution
    thread_id: str | None = None


def resolve_env(
    template: NamespaceTemplate,
    store: BaseStore | None,
    runtime: ToolRuntime[Any, Any] | None,
    tool_name: str,
) -> ToolEnv:
    """Resolve store, namespace and attribution from the tool's arguments and the running graph.

    ``runtime`` is injected by ``ToolNode``; without it (a tool invoked inside a graph node, or
    on its own) the graph's config and runtime are looked up, if any.
    """
    config: Mapping[str, Any]
    if runtime is not None:
        config = runtime.config or {}
        context = runtime.context
        graph_store = runtime.store
        tool_call_id = runtime.tool_call_id
    else:
        try:
            config = get_config()
        except RuntimeError:
            config = {}
        try:
            graph_runtime: Any = get_runtime()
        except (RuntimeError, KeyError):
            graph_runtime = None
        context = getattr(graph_runtime, "context", None)
        graph_store = getattr(graph_runtime, "store", None)
        tool_call_id = None
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    resolved = store if store is not None else graph_store
    if resolved is None:
        raise MemoryToolConfigError(
            f"{tool_name}: no store - pass store= to the tool factory or compile the graph "
            "with store=..."
        )
    root = template.fill(context, configurable)
    thread = configurable.get("thread_id")
    thread_id = None if thread is None else str(thread)
    return ToolEnv(
        store=resolved,
        root=root,
        attribution=Attribution(author=tool_name, run_id=thread_id, trace_id=tool_call_id),
        thread_id=thread_id,
    )
