"""The memory manager: memories that form themselves from conversations.

:class:`MemoryManager` reads a conversation, skips pure duplicates without a model call, asks a
chat model (structured output) for actions on the namespace's facts, episodes and instructions,
validates and applies them (history kept), and reports a :class:`ManagerResult`. It runs on its
own (``invoke`` / ``ainvoke``), as a LangGraph node (``as_node``), or deferred and debounced per
thread (:class:`BackgroundManager`, :class:`AsyncBackgroundManager`).
:func:`create_memory_store_manager` and :class:`ReflectionExecutor` are the langmem-compatible
entry points. See ``docs/manager.md``.

The errors it raises are in :mod:`langmem_adapters.errors`; the scripted model that tests and the
demo use is :class:`langmem_adapters.demo.ScriptedMemoryModel`. Helpers of the modules here
(``manager.dedupe.jaccard``, ``manager.prompt.build_prompt``...) are importable from their
modules; their old paths from this package still work, with a ``DeprecationWarning``.
"""

from langmem_adapters.compat import moved
from langmem_adapters.manager.actions import (
    ACTION_KINDS,
    ActionKind,
    ManagerResult,
    MemoryAction,
    MemoryActions,
    Outcome,
    Remembered,
)
from langmem_adapters.manager.background import AsyncBackgroundManager, BackgroundManager
from langmem_adapters.manager.dedupe import Dedupe
from langmem_adapters.manager.langmem import (
    MemoryStoreManager,
    ReflectionExecutor,
    create_memory_store_manager,
)
from langmem_adapters.manager.manager import MemoryManager
from langmem_adapters.manager.prompt import SYSTEM_PROMPT

__all__ = [
    "ACTION_KINDS",
    "SYSTEM_PROMPT",
    "ActionKind",
    "AsyncBackgroundManager",
    "BackgroundManager",
    "Dedupe",
    "ManagerResult",
    "MemoryAction",
    "MemoryActions",
    "MemoryManager",
    "MemoryStoreManager",
    "Outcome",
    "ReflectionExecutor",
    "Remembered",
    "create_memory_store_manager",
]

__getattr__ = moved(
    __name__,
    {
        "ScriptedMemoryModel": "langmem_adapters.demo",
        "last_user_text": "langmem_adapters.demo",
        "jaccard": "langmem_adapters.manager.dedupe",
        "normalise": "langmem_adapters.manager.dedupe",
        "build_prompt": "langmem_adapters.manager.prompt",
        "read_data": "langmem_adapters.manager.prompt",
        "InvalidArgumentError": "langmem_adapters.errors",
        "InvalidArgumentTypeError": "langmem_adapters.errors",
        "MemoryToolConfigError": "langmem_adapters.errors",
        "NamespaceTemplateError": "langmem_adapters.errors",
    },
)
