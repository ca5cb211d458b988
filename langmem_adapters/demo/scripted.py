"""Scripted chat models: test doubles that make the demo, the notebooks and tests run offline and
deterministically (no API key). Not for production: they answer from a script, not a model.

- :class:`ScriptedChatModel` plays a fixed script of agent steps per user message (the demo's
  agent, :data:`~langmem_adapters.demo.SCRIPT`).
- :class:`ScriptedMemoryModel` answers the memory manager's structured-output calls with the
  actions its ``script`` computes from the prompt's data
  (:func:`~langmem_adapters.manager.prompt.read_data`): the memories shown (with their ids), the
  conversation and the instructions. It counts its calls and keeps what it was shown, so tests,
  the notebook and the demo can check both.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr

from langmem_adapters.errors import InvalidArgumentTypeError
from langmem_adapters.manager.actions import MemoryActions
from langmem_adapters.manager.prompt import read_data

__all__ = ["Script", "ScriptedChatModel", "ScriptedMemoryModel", "Step", "last_user_text"]

Step = Callable[[list[ToolMessage]], AIMessage]
"""One scripted model reply, computed from the tool results of the previous step."""


class ScriptedChatModel(FakeMessagesListChatModel):
    """A chat model that plays a fixed script: for each user message, a list of steps.

    Step ``i`` answers the ``i``-th model call after that user message and may use the tool results
    that came back from step ``i - 1`` (e.g. the id of a memory it just looked up). It makes the demo
    and the notebooks run offline and deterministically, and is labelled as such in the transcript.
    """

    responses: list[BaseMessage] = Field(default_factory=list)
    script: dict[str, list[Step]]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        after = messages[last + 1 :]
        step = sum(isinstance(m, AIMessage) for m in after)
        results: list[ToolMessage] = []
        for m in reversed(after):
            if not isinstance(m, ToolMessage):
                break
            results.insert(0, m)
        steps = self.script.get(str(messages[last].content), []) if last >= 0 else []
        reply = (
            steps[step](results)
            if step < len(steps)
            else AIMessage("(no scripted reply for this message)")
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The script already knows the tools: binding changes nothing."""
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-demo"


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
