"""The memory manager: memories that form themselves from conversations.

:class:`MemoryManager` reads a conversation, skips pure duplicates without a model call, asks a
chat model (structured output) for actions on the namespace's facts, episodes and instructions,
validates and applies them (history kept), and reports a :class:`ManagerResult`. It runs on its
own (``invoke`` / ``ainvoke``), as a LangGraph node (``as_node``), or deferred and debounced per
thread (:class:`BackgroundManager`, :class:`AsyncBackgroundManager`).
:func:`create_memory_store_manager` and :class:`ReflectionExecutor` are the langmem-compatible
entry points. See ``docs/manager.md``.
"""

from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MemoryToolConfigError,
    NamespaceTemplateError,
)
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
from langmem_adapters.manager.dedupe import Dedupe, jaccard, normalise
from langmem_adapters.manager.langmem import (
    MemoryStoreManager,
    ReflectionExecutor,
    create_memory_store_manager,
)
from langmem_adapters.manager.manager import MemoryManager
from langmem_adapters.manager.prompt import SYSTEM_PROMPT, build_prompt, read_data
from langmem_adapters.manager.scripted import ScriptedMemoryModel, last_user_text

__all__ = [
    "ACTION_KINDS",
    "SYSTEM_PROMPT",
    "ActionKind",
    "AsyncBackgroundManager",
    "BackgroundManager",
    "Dedupe",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "ManagerResult",
    "MemoryAction",
    "MemoryActions",
    "MemoryManager",
    "MemoryStoreManager",
    "MemoryToolConfigError",
    "NamespaceTemplateError",
    "Outcome",
    "ReflectionExecutor",
    "Remembered",
    "ScriptedMemoryModel",
    "build_prompt",
    "create_memory_store_manager",
    "jaccard",
    "last_user_text",
    "normalise",
    "read_data",
]
