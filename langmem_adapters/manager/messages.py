"""Conversations as the manager reads them: :class:`Turn` (role, text, fingerprint) from
LangChain messages or ``{"role", "content"}`` dicts, and the per-thread :class:`Cursors` that say
which turns are new since the last call on the same thread."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_adapters.errors import InvalidArgumentTypeError
from langmem_adapters.memory.tier import digest

__all__ = ["Cursors", "Turn", "messages_of", "to_turns"]

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


@dataclass(frozen=True)
class Turn:
    """One message: ``role`` is ``user``, ``assistant``, ``system`` or ``tool``; ``key`` identifies
    it (the message id when it has one, else a digest of its position, role and text)."""

    role: str
    text: str
    key: str


def _text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str)
            or (isinstance(block, Mapping) and block.get("type") == "text")
        ]
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def messages_of(input: Any) -> Sequence[Any]:
    """The messages of a manager input: a list of messages, or a mapping with ``"messages"``."""
    if isinstance(input, Mapping):
        input = input.get("messages")
    if isinstance(input, (str, bytes)) or not isinstance(input, Sequence):
        raise InvalidArgumentTypeError(
            "the memory manager takes a list of messages or {'messages': [...]}, "
            f"got {type(input).__name__}"
        )
    return input


def to_turns(messages: Sequence[Any]) -> list[Turn]:
    """Read LangChain messages and ``{"role", "content"}`` dicts (roles as langchain's or OpenAI's)."""
    turns = []
    for index, message in enumerate(messages):
        if isinstance(message, BaseMessage):
            role, text, mid = (
                _ROLES.get(message.type, message.type),
                _text(message.content),
                message.id,
            )
        elif isinstance(message, Mapping):
            raw_role = str(message.get("role") or message.get("type") or "user")
            role = _ROLES.get(raw_role, raw_role)
            text, mid = _text(message.get("content")), message.get("id")
        else:
            raise InvalidArgumentTypeError(
                f"message {index} must be a LangChain message or a dict with role and content, "
                f"got {type(message).__name__}"
            )
        key = str(mid) if mid else digest(f"{index}\x00{role}\x00{text}")
        turns.append(Turn(role, text, key))
    return turns


class Cursors:
    """Where each thread's last processed conversation ended, so a call only treats later turns
    as new. Kept in this process (least recently used threads are forgotten past ``size``): after
    a restart a thread's first call treats the whole conversation as new."""

    def __init__(self, size: int = 10_000) -> None:
        self._seen: OrderedDict[tuple[Any, ...], tuple[int, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def new_turns(self, thread: tuple[Any, ...] | None, turns: list[Turn]) -> list[Turn]:
        """The turns after the last one processed on ``thread`` (all of them for a new thread, a
        call without a thread id, or a conversation that no longer contains that turn)."""
        if thread is None or not turns:
            return turns
        with self._lock:
            seen = self._seen.get(thread)
        if seen is None:
            return turns
        count, last = seen
        if count <= len(turns) and turns[count - 1].key == last:
            return turns[count:]
        for index in range(len(turns) - 1, -1, -1):
            if turns[index].key == last:
                return turns[index + 1 :]
        return turns

    def advance(self, thread: tuple[Any, ...] | None, turns: list[Turn]) -> None:
        """Record that ``turns`` (the whole conversation) of ``thread`` has been processed."""
        if thread is None or not turns:
            return
        with self._lock:
            self._seen[thread] = (len(turns), turns[-1].key)
            self._seen.move_to_end(thread)
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
