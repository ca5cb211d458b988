"""The procedural memory tools: ``read_instructions`` and ``update_instructions`` on versioned,
named instruction sets, with an optimistic ``expected_version`` check on update."""

from __future__ import annotations

from typing import Any

from langmem_adapters.errors import ConcurrentWriteError
from langmem_adapters.memory import ProceduralMemory, Procedure
from langmem_adapters.memory.flows import Flow, call
from langmem_adapters.tools.builder import Arg, ToolInputError, ToolSpec
from langmem_adapters.tools.env import ToolEnv
from langmem_adapters.tools.values import iso, parse_time, to_json

__all__ = ["PROCEDURAL_TOOLS"]


def _procedure_dict(procedure: Procedure) -> dict[str, Any]:
    """A version in the compact JSON form shown to the model."""
    return {
        "name": procedure.name,
        "version": procedure.version,
        "text": procedure.text,
        "recorded_at": iso(procedure.recorded_at),
    }


def _read_flow(env: ToolEnv, name: str, as_of: str | None) -> Flow[str]:
    """The current version of ``name`` (or the one current at ``as_of``); version 0 if none."""
    skills = ProceduralMemory(env.store, namespace=env.root)
    when = parse_time(as_of, "as_of")
    found: Procedure | None
    if when is None:
        found = yield from call(skills, "current", name)
    else:
        found = yield from call(skills, "as_of", name, when)
    if found is None:
        return to_json({"name": name, "version": 0, "text": None})
    return to_json(_procedure_dict(found))


def _publish_flow(env: ToolEnv, name: str, text: str, expected_version: int | None) -> Flow[str]:
    """Publish the next version; a lost race tells the model the version to re-read and merge."""
    skills = ProceduralMemory(env.store, namespace=env.root)
    try:
        published: Procedure = yield from call(
            skills,
            "publish",
            name,
            text,
            expected_version=expected_version,
            attribution=env.attribution,
        )
    except ConcurrentWriteError:
        current: Procedure | None = yield from call(skills, "current", name)
        now = 0 if current is None else current.version
        raise ToolInputError(
            f"instructions {name!r} are at version {now}, not {expected_version}; "
            "read_instructions again and merge your change"
        ) from None
    return f"published instructions {name!r} version {published.version}"


_READ_ARGS = [
    Arg("name", str, "Name of the instruction set, e.g. 'tone'."),
    Arg(
        "as_of", str | None, "Optional ISO 8601 date/time: the version that was current then.", None
    ),
]

_UPDATE_ARGS = [
    Arg("name", str, "Name of the instruction set."),
    Arg("text", str, "The complete new instructions (not a diff)."),
    Arg(
        "expected_version",
        int | None,
        "The version you read (0 if none existed); the update fails if "
        "someone changed the instructions since.",
        None,
    ),
]


#: The procedural tools: ``read_instructions`` and ``update_instructions``.
PROCEDURAL_TOOLS = (
    ToolSpec(
        "read_instructions",
        (
            "Read a named set of your own instructions (how to behave for this user or task). "
            "Returns JSON {name, version, text, recorded_at}; version 0 and text null if it "
            "does not exist yet."
        ),
        _READ_ARGS,
        _read_flow,
    ),
    ToolSpec(
        "update_instructions",
        (
            "Replace a named set of your own instructions with an improved complete version, "
            "e.g. after user feedback. Read them first and pass the version you read as "
            "expected_version. Every version is kept."
        ),
        _UPDATE_ARGS,
        _publish_flow,
    ),
)
