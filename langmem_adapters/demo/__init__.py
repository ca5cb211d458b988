"""The offline demo (``langmem-adapters demo``) and the scripted chat models it runs on.

Not part of the memory layer: an example agent and test doubles, kept in the installed package so
that the CLI's demo, the notebooks and tests run offline (no API key, deterministic).

- :mod:`langmem_adapters.demo.agent`: the demo's story (:data:`TURNS`, :data:`SCRIPT`), an agent
  with this package's memory tools (:func:`build_agent`), :func:`run_demo` and
  :func:`run_background_step`, and the transcript's rendering.
- :mod:`langmem_adapters.demo.scripted`: :class:`ScriptedChatModel` (plays agent steps) and
  :class:`ScriptedMemoryModel` (answers the memory manager with scripted actions).
"""

from langmem_adapters.demo.agent import (
    BACKGROUND_FACTS,
    BACKGROUND_TURNS,
    ROOT,
    SCRIPT,
    SCRIPTED_LABEL,
    SYSTEM_PROMPT,
    TURNS,
    USER,
    build_agent,
    clear,
    run_background_step,
    run_demo,
    show_memory,
    show_step,
)
from langmem_adapters.demo.scripted import (
    Script,
    ScriptedChatModel,
    ScriptedMemoryModel,
    Step,
    last_user_text,
)

__all__ = [
    "BACKGROUND_FACTS",
    "BACKGROUND_TURNS",
    "ROOT",
    "SCRIPT",
    "SCRIPTED_LABEL",
    "SYSTEM_PROMPT",
    "TURNS",
    "USER",
    "Script",
    "ScriptedChatModel",
    "ScriptedMemoryModel",
    "Step",
    "build_agent",
    "clear",
    "last_user_text",
    "run_background_step",
    "run_demo",
    "show_memory",
    "show_step",
]
