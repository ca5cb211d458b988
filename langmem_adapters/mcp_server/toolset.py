"""The memory tools the MCP server offers, each one of our LangChain memory tools (same schema, same
validation, same flow over the memory tiers) made for the caller's namespace.

Facts get one tool per action (``save_memory``, ``update_memory``, ``forget_memory``: the
``manage_memory`` tool with one permitted action, the action pinned) plus ``search_memory``;
episodes and instructions are the tools of ``create_memory_tools`` as they are.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore

from langmem_adapters.tools import create_manage_memory_tool, create_search_memory_tool
from langmem_adapters.tools.builder import build_tool
from langmem_adapters.tools.episodic import EPISODIC_TOOLS
from langmem_adapters.tools.procedural import PROCEDURAL_TOOLS
from langmem_adapters.tools.semantic import Action
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = ["MCP_TOOLS", "McpTool", "ToolCache", "ToolFailure", "run_tool"]

Root = tuple[str, ...]
Maker = Callable[[BaseStore, Root], BaseTool]


@dataclass(frozen=True)
class McpTool:
    """One MCP tool: its name, how to make the LangChain tool behind it for a namespace, the
    arguments it pins (hidden from the client), and hints for the host."""

    name: str
    make: Maker
    pinned: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # optional in the LangChain tool, required here
    description: str | None = None  # None: the LangChain tool's own
    read_only: bool = False
    destructive: bool = False


def _manage(name: str, action: Action) -> Maker:
    def make(store: BaseStore, root: Root) -> BaseTool:
        return create_manage_memory_tool(root, store=store, actions_permitted=[action], name=name)

    return make


def _search(store: BaseStore, root: Root) -> BaseTool:
    return create_search_memory_tool(root, store=store)


def _spec(spec: Any) -> Maker:
    def make(store: BaseStore, root: Root) -> BaseTool:
        return build_tool(spec, template=NamespaceTemplate(root), store=store)

    return make


MCP_TOOLS: tuple[McpTool, ...] = (
    McpTool(
        "save_memory",
        _manage("save_memory", "create"),
        pinned={"action": "create", "id": None},
        required=("content",),
        description="Save a new memory (a fact or preference about the user, in plain text) "
        "to persist across conversations. Returns its id.",
    ),
    McpTool(
        "search_memory",
        _search,
        read_only=True,
    ),
    McpTool(
        "update_memory",
        _manage("update_memory", "update"),
        pinned={"action": "update"},
        required=("id", "content"),
        description="Correct a memory: give its id (from search_memory) and the new text. The old "
        "text is kept as history (search_memory with as_of still finds it); the memory gets a "
        "new id, returned.",
    ),
    McpTool(
        "forget_memory",
        _manage("forget_memory", "delete"),
        pinned={"action": "delete", "content": None},
        required=("id",),
        description="Forget a memory: give its id (from search_memory). It stops being current "
        "now; as_of searches of earlier times still find it.",
        destructive=True,
    ),
    *(McpTool(spec.name, _spec(spec)) for spec in EPISODIC_TOOLS),
    *(
        McpTool(spec.name, _spec(spec), read_only=spec.name.startswith("read"))
        for spec in PROCEDURAL_TOOLS
    ),
)


class ToolFailure(Exception):
    """A tool call the model can fix (bad input, unknown id): nothing was changed."""


class ToolCache:
    """The LangChain tools of the namespaces in use, made once per namespace (the most recently
    used ``size`` namespaces are kept)."""

    def __init__(self, store: BaseStore, size: int = 1024) -> None:
        self.store = store
        self.size = size
        self._tools: OrderedDict[Root, dict[str, BaseTool]] = OrderedDict()

    def get(self, root: Root, name: str) -> BaseTool:
        """The tool ``name`` on namespace ``root``."""
        tools = self._tools.get(root)
        if tools is None:
            tools = {t.name: t.make(self.store, root) for t in MCP_TOOLS}
            self._tools[root] = tools
            while len(self._tools) > self.size:
                self._tools.popitem(last=False)
        else:
            self._tools.move_to_end(root)
        return tools[name]


async def run_tool(tool: BaseTool, arguments: Mapping[str, Any], call_id: str) -> str:
    """Run a LangChain memory tool as a tool call; its text result, or :class:`ToolFailure` with
    the message the tool gave the model (bad arguments, unknown id...)."""
    message = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "args": dict(arguments), "id": call_id}
    )
    assert isinstance(message, ToolMessage)
    text = message.content if isinstance(message.content, str) else str(message.content)
    if message.status == "error":
        raise ToolFailure(text)
    return text
