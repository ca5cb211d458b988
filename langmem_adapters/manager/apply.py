"""Validation and application of the model's actions.

Every action is checked before anything is written (:func:`validate`): its kind must be enabled,
a ``supersede`` or ``end`` must name a memory that was *shown to the model* in this call (so a
fooled model cannot reach any other record, nor another namespace: actions carry no namespace),
each id may be changed once per call, texts must be storable, and an instructions update must
expect the version that was shown. Only then are the valid actions applied in order
(:func:`apply`); a write lost to a concurrent writer is reported as rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langmem_adapters.errors import (
    ConcurrentWriteError,
    InvalidMemoryWriteError,
    InvalidValueError,
    MemoryTypeError,
    NonJSONValueError,
    RecordNotFoundError,
)
from langmem_adapters.manager.actions import ActionKind, MemoryAction, Outcome, Remembered
from langmem_adapters.manager.dedupe import Dedupe, normalise
from langmem_adapters.manager.layouts import FactLayout
from langmem_adapters.memory import Attribution, EpisodicMemory, ProceduralMemory, Procedure
from langmem_adapters.memory.checks import check_text
from langmem_adapters.memory.flows import Flow, call

__all__ = ["Plan", "apply", "validate"]

#: Write errors that mean "this action cannot be applied", not "the store is broken".
_WRITE_ERRORS = (
    ConcurrentWriteError,
    RecordNotFoundError,
    InvalidMemoryWriteError,
    MemoryTypeError,
    InvalidValueError,
    NonJSONValueError,
)


@dataclass(frozen=True)
class Plan:
    """What one call may do: the enabled kinds, the memories shown, the instructions shown."""

    allowed: Sequence[ActionKind]
    shown: Sequence[Remembered]
    procedure_name: str | None
    procedure: Procedure | None
    dedupe: Dedupe | None


def _problem(action: MemoryAction, plan: Plan, touched: set[str], created: list[str]) -> str | None:
    """Why ``action`` must be rejected, or ``None`` when it is valid (``skip:`` marks a no-op)."""
    kind = action.action
    if kind not in plan.allowed:
        return f"action {kind!r} is not enabled for this manager"
    if kind == "none":
        return "skip: nothing to do"
    shown = {f.id: f for f in plan.shown}
    if kind in ("supersede", "end"):
        if action.id is None:
            return f"{kind} needs the id of a memory shown"
        if action.id not in shown:
            return f"unknown or outdated id {action.id!r}: not one of the memories shown"
        if action.id in touched:
            return f"memory {action.id!r} was already changed by an earlier action of this call"
    if kind in ("create", "supersede", "episode", "instructions"):
        try:
            check_text(action.text)
        except (
            MemoryTypeError,
            InvalidMemoryWriteError,
            InvalidValueError,
            NonJSONValueError,
        ) as exc:
            return f"{kind}: {exc}"
    text = action.text or ""
    if kind == "create":
        if normalise(text) in created:
            return "skip: the same fact is created twice in this call"
        # The shown facts' scores rank them against the conversation, not against this text.
        twin = plan.dedupe.lexical().match(text, plan.shown) if plan.dedupe else None
        if twin is not None:
            return f"skip: duplicate of memory {twin.id}"
    if (
        kind == "supersede"
        and action.id is not None
        and text.strip() == shown[action.id].text.strip()
    ):
        return f"skip: memory {action.id} already says that"
    if kind == "instructions":
        if plan.procedure_name is None:
            return "instruction updates are not enabled for this manager"
        current = plan.procedure.version if plan.procedure else 0
        if action.expected_version != current:
            return (
                f"outdated instructions: expected_version {action.expected_version!r} but the "
                f"version shown is {current}"
            )
    return None


def validate(
    actions: Sequence[MemoryAction], plan: Plan
) -> tuple[list[MemoryAction], list[Outcome]]:
    """The actions to apply, and the outcome of every other one (rejected or skipped)."""
    touched: set[str] = set()
    created: list[str] = []
    valid: list[MemoryAction] = []
    others: list[Outcome] = []
    for action in actions:
        problem = _problem(action, plan, touched, created)
        if problem is None:
            valid.append(action)
            if action.id is not None and action.action in ("supersede", "end"):
                touched.add(action.id)
            if action.action == "create" and action.text:
                created.append(normalise(action.text))
        elif problem.startswith("skip: "):
            others.append(Outcome(action, "skipped", problem.removeprefix("skip: ")))
        else:
            others.append(Outcome(action, "rejected", problem))
    return valid, others


def _apply_one(
    action: MemoryAction,
    facts: FactLayout,
    episodes: EpisodicMemory,
    procedures: ProceduralMemory,
    plan: Plan,
    attribution: Attribution,
) -> Flow[Outcome]:
    """Write one validated action."""
    text = action.text or ""
    if action.action == "create":
        record = yield from facts.create(text, attribution)
        return Outcome(action, "applied", f"created memory {record.id}", record)
    if action.action == "supersede":
        record = yield from facts.supersede(str(action.id), text, attribution)
        how = "kept as history" if facts.keeps_history else "rewritten in place"
        return Outcome(action, "applied", f"memory {action.id} superseded ({how})", record)
    if action.action == "end":
        record = yield from facts.end(str(action.id), attribution)
        how = "kept as history" if facts.keeps_history else "deleted"
        return Outcome(action, "applied", f"memory {action.id} ended ({how})", record)
    if action.action == "episode":
        record = yield from call(
            episodes,
            "record",
            text,
            outcome=action.outcome,
            success=action.success,
            thread_id=attribution.run_id,
            attribution=attribution,
        )
        return Outcome(action, "applied", f"recorded episode {record.id}", record)
    record = yield from call(
        procedures,
        "publish",
        str(plan.procedure_name),
        text,
        expected_version=action.expected_version,
        attribution=attribution,
    )
    return Outcome(
        action, "applied", f"published {plan.procedure_name!r} v{record.version}", record
    )


def apply(
    actions: Sequence[MemoryAction],
    *,
    facts: FactLayout,
    episodes: EpisodicMemory,
    procedures: ProceduralMemory,
    plan: Plan,
    attribution: Attribution,
) -> Flow[list[Outcome]]:
    """Apply validated actions in order; one lost to a concurrent writer becomes a rejection."""
    outcomes = []
    for action in actions:
        try:
            outcome = yield from _apply_one(action, facts, episodes, procedures, plan, attribution)
        except _WRITE_ERRORS as exc:
            outcome = Outcome(action, "rejected", f"outdated: {exc}")
        outcomes.append(outcome)
    return outcomes
