"""A scripted chat model for the memory manager: deterministic extraction offline.

:class:`ScriptedMemoryModel` answers every structured-output call with the actions its ``script``
computes from the prompt's data (:func:`~langmem_adapters.manager.prompt.read_data`): the
memories shown (with their ids), the conversation and the instructions. It counts its calls and
keeps what it was shown, so tests, the notebook and the demo can check both.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr

from langmem_adapters.errors import InvalidArgumentTypeError
from langmem_adapters.manager.actions import MemoryActions
from langmem_adapters.manager.prompt import read_data

__all__ = ["Script", "ScriptedMemoryModel", "last_user_text"]

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
"""Computes the actions (dicts of :class:`~langmem_adapters.manager.actions.MemoryAction`) for
the data of one prompt."""


def last_user_text(data: dict[str, Any]) -> str:
    """The newest user turn of a prompt's data (``""`` if none)."""
    turns = [t for t in data.get("conversation", []) if t.get("role") == "user"]
    return str(turns[-1]["content"]) if turns else ""


class ScriptedMemoryModel(BaseChatModel):
    """Answers with the tool call ``MemoryActions(actions=script(data))``; see the module docstring.

    ``calls`` counts the model calls; ``seen`` holds the data of each prompt, in call order.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script
    seen: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.seen)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        data = read_data(messages)
        with self._lock:
            self.seen.append(data)
        actions = self.script(data)
        call = {
            "name": MemoryActions.__name__,
            "args": {"actions": actions},
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "tool_call",
        }
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Structured output binds the manager's schema, which the script answers in; any other
        tool is refused, so the model cannot be mistaken for a general scripted model."""
        if list(tools) != [MemoryActions]:
            raise InvalidArgumentTypeError(
                f"ScriptedMemoryModel answers only in the MemoryActions schema, got {tools!r}"
            )
        return self

    @property
    def _llm_type(self) -> str:
        """LangChain's name for this kind of model."""
        return "scripted-memory-manager"
