"""What the memory manager's model answers (:class:`MemoryActions`) and what the manager reports
(:class:`Outcome`, :class:`ManagerResult`).

The schema is flat on purpose: one action object with an ``action`` kind and optional fields, so
every provider's structured output can produce it. Each action of an answer is parsed on its own
(:func:`parse_actions`): one malformed action is rejected without discarding the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

__all__ = [
    "ACTION_KINDS",
    "ActionKind",
    "ManagerResult",
    "MemoryAction",
    "MemoryActions",
    "Outcome",
    "Remembered",
    "parse_actions",
]

ActionKind = Literal["create", "supersede", "end", "episode", "instructions", "none"]

ACTION_KINDS: tuple[ActionKind, ...] = (
    "create",
    "supersede",
    "end",
    "episode",
    "instructions",
    "none",
)


class MemoryAction(BaseModel):
    """One change to long-term memory proposed by the model."""

    action: ActionKind = Field(
        description=(
            "create: store a new lasting fact (text). supersede: a stored memory changed or was "
            "wrong (id, text = the corrected fact). end: a stored memory no longer holds or the "
            "user asked to forget it (id). episode: something that happened, worth recalling as "
            "an experience (text, outcome, success). instructions: a better version of the "
            "agent instructions (text, expected_version). none: nothing worth remembering."
        )
    )
    id: str | None = Field(
        default=None, description="The id of a memory listed in the data (supersede, end)."
    )
    text: str | None = Field(
        default=None,
        description="The fact, the episode or the new instructions, as one self-contained text.",
    )
    outcome: str | None = Field(
        default=None, description="How the episode turned out (episode only)."
    )
    success: bool | None = Field(
        default=None, description="Whether the episode went well (episode only)."
    )
    expected_version: int | None = Field(
        default=None, description="The instructions version shown in the data (instructions only)."
    )


class MemoryActions(BaseModel):
    """The changes to long-term memory that the conversation calls for (empty when none)."""

    actions: list[MemoryAction] = Field(default_factory=list)


@dataclass(frozen=True)
class Remembered:
    """A current fact as the manager sees it, whatever the layout: its id, text and search score."""

    id: str
    text: str
    score: float | None = None


@dataclass(frozen=True)
class Outcome:
    """What became of one action: ``applied``, ``skipped`` (a no-op such as a duplicate) or
    ``rejected`` (invalid, outdated or not permitted; nothing was written for it).

    ``record`` is what was written (a ``Fact``, ``Episode``, ``Procedure`` or ``Remembered``).
    """

    action: MemoryAction | Mapping[str, Any]
    status: Literal["applied", "skipped", "rejected"]
    detail: str
    record: Any = None

    @property
    def kind(self) -> str:
        """The action's kind (``"create"``, ``"end"``...; ``"invalid"`` for an unparsable one)."""
        if isinstance(self.action, MemoryAction):
            return self.action.action
        return "invalid"


@dataclass(frozen=True)
class ManagerResult:
    """What one manager call did: the namespace, how many model calls it made, why it skipped
    the model (``"no new user message"``, ``"duplicate"``) and the outcome of every action,
    compaction included."""

    namespace: tuple[str, ...]
    thread_id: str | None
    model_calls: int
    skipped: str | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    shown: list[Remembered] = field(default_factory=list)

    @property
    def applied(self) -> list[Outcome]:
        """The actions that changed memory."""
        return [o for o in self.outcomes if o.status == "applied"]

    @property
    def rejected(self) -> list[Outcome]:
        """The actions refused by validation or lost to a concurrent writer."""
        return [o for o in self.outcomes if o.status == "rejected"]

    def langmem_puts(self) -> list[dict[str, Any]]:
        """The applied fact writes in the shape langmem's store manager returns:
        ``{"namespace", "key", "value": {"kind": "Memory", "content": {"content": text}}}``."""
        puts = []
        for o in self.applied:
            if o.kind in ("create", "supersede") and o.record is not None:
                puts.append(
                    {
                        "namespace": self.namespace,
                        "key": o.record.id,
                        "value": {"kind": "Memory", "content": {"content": o.record.text}},
                    }
                )
        return puts


def parse_actions(raw: Any) -> tuple[list[MemoryAction], list[Outcome]]:
    """The valid actions of a model answer and a rejection for each malformed one.

    ``raw`` is what ``with_structured_output(..., include_raw=True)`` returns (its ``parsed``
    answer, else the raw message's tool call), a :class:`MemoryActions`, or a plain mapping.
    """
    if isinstance(raw, Mapping) and "raw" in raw:
        if isinstance(raw.get("parsed"), MemoryActions):
            return list(raw["parsed"].actions), []
        message = raw["raw"]
        calls = getattr(message, "tool_calls", None) or []
        raw = calls[0].get("args", {}) if calls else {}
    if isinstance(raw, MemoryActions):
        return list(raw.actions), []
    items: Any = raw.get("actions", []) if isinstance(raw, Mapping) else raw
    if not isinstance(items, Sequence) or isinstance(items, str):
        return [], [
            Outcome({"actions": items}, "rejected", "the model's answer is not a list of actions")
        ]
    actions: list[MemoryAction] = []
    rejected: list[Outcome] = []
    for item in items:
        try:
            actions.append(MemoryAction.model_validate(item))
        except ValidationError as exc:
            problem = "; ".join(str(e.get("msg")) for e in exc.errors())
            shown = dict(item) if isinstance(item, Mapping) else {"value": item}
            rejected.append(Outcome(shown, "rejected", f"malformed action: {problem}"))
    return actions, rejected
