"""Agent memory tools: LangChain tools that let a LangGraph agent save, search and correct its memory.

``create_manage_memory_tool`` and ``create_search_memory_tool`` are named and shaped like langmem's
tools of the same names (tool names ``manage_memory`` / ``search_memory``; arguments ``content``,
``action`` in ``create``/``update``/``delete``, ``id``; ``query``, ``limit``, ``offset``,
``filter``), so a langmem user switches by changing the import. They are backed by
:class:`~langmem_adapters.memory.SemanticMemory`, which keeps facts under ``(*root, "semantic")``
where ``root`` is the filled namespace template. Differences from langmem, on purpose:

* ``update`` *supersedes* the fact and ``delete`` *ends* it: nothing is overwritten or removed, so
  ``search_memory(..., as_of=...)`` still answers what was believed at an earlier time. The result
  of ``update`` names the id of the new version (``"updated memory <new id>"``); update it next time.
* ``update``/``delete`` of an unknown id, or of a version that was already superseded or ended,
  return an error message to the model instead of silently creating an item.
* Search results are compact JSON: ``[{"id", "text", "valid_from", "valid_to", "score"}]`` with ISO
  8601 times (``valid_to`` is ``null`` while the memory still holds); ``filter`` applies to a
  fact's ``metadata``. Memory content is text (``schema`` other than ``str`` is not supported).

langmem interoperability. langmem's tools store ``{"content": ...}`` items directly under
``root``. Our tools treat those as memories too: ``search_memory`` also reads items whose namespace
is exactly ``root`` and whose value has ``content`` and no ``kind`` (valid from their
``updated_at``; ``filter`` applies to their other top-level fields; with ``as_of`` only items last
written by then are shown). ``update``/``delete`` of such an id *migrates* it first: its content is
recorded as a fact valid and recorded from the item's ``updated_at`` (metadata ``langmem_id``),
that fact is then superseded or ended, and the root item is removed - so the old text stays in the
history and point-in-time search works. Migration is not atomic with respect to a concurrent
writer of the same langmem item. The other way round, langmem's search tool searches ``root`` as a
prefix, so it returns our facts (their value carries the text under ``text``), as well as
superseded versions and end markers; its manage tool cannot update or delete our facts (it writes
under ``root``, not ``(*root, "semantic")``).

Namespaces. A namespace is a tuple of labels in which ``{name}`` fields, e.g. ``("memories",
"{user_id}")``, are filled per call from the LangGraph runtime context (``invoke(...,
context={"user_id": ...})``, a mapping or an object with attributes) and then from
``config["configurable"]``. A missing value raises :class:`NamespaceTemplateError` naming it; it
is a set-up error the model cannot fix, so it is raised to the caller, not shown to the model.

The store is the ``store`` argument, else the graph's store (injected by ``ToolNode`` through
``ToolRuntime``, or ``langgraph.config.get_store()``); with neither, :class:`MemoryToolConfigError`.
Errors the model can fix (bad action, missing id, unknown id, bad filter or date) come back to it as
a tool error message and change nothing. Every tool works with ``invoke`` and ``ainvoke``; the async
path uses the tiers' async twins. Writes are attributed to the tool name, the LangGraph thread id
(``run_id``) and the tool call id (``trace_id``).

``create_memory_tools`` returns a coherent set across tiers: the two semantic tools plus
``record_episode`` / ``search_episodes`` (episodic) and ``read_instructions`` /
``update_instructions`` (procedural, versioned).
"""

from langmem_adapters.compat import moved
from langmem_adapters.tools.semantic import (
    DEFAULT_MANAGE_INSTRUCTIONS as DEFAULT_MANAGE_INSTRUCTIONS,
)
from langmem_adapters.tools.semantic import Action as Action
from langmem_adapters.tools.semantic import create_manage_memory_tool, create_search_memory_tool
from langmem_adapters.tools.sets import Tier as Tier
from langmem_adapters.tools.sets import create_memory_tools

# ``Action``, ``Tier`` and ``DEFAULT_MANAGE_INSTRUCTIONS`` stay importable from here, as before.
__all__ = [
    "create_manage_memory_tool",
    "create_memory_tools",
    "create_search_memory_tool",
]

# The errors the tools raise live in langmem_adapters.errors; their old paths from here still work.
__getattr__ = moved(
    __name__,
    dict.fromkeys(["MemoryToolConfigError", "NamespaceTemplateError"], "langmem_adapters.errors"),
)
