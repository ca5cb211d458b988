"""The semantic memory tools, ``manage_memory`` and ``search_memory``, shaped like langmem's and
backed by :class:`~langmem_adapters.memory.SemanticMemory` (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from langchain_core.tools import StructuredTool, ToolException
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.memory import Fact, SemanticMemory
from langmem_adapters.memory.checks import check_filter
from langmem_adapters.memory.flows import Flow, call
from langmem_adapters.memory.times import utc_now
from langmem_adapters.tools.builder import Arg, ResponseFormat, ToolInputError, ToolSpec, build_tool
from langmem_adapters.tools.env import ToolEnv
from langmem_adapters.tools.langmem import langmem_hits, migrate_langmem_item
from langmem_adapters.tools.templates import NamespaceTemplate
from langmem_adapters.tools.values import Hit, check_page, parse_time, to_json

__all__ = [
    "ACTIONS",
    "DEFAULT_MANAGE_INSTRUCTIONS",
    "Action",
    "create_manage_memory_tool",
    "create_search_memory_tool",
]

Action = Literal["create", "update", "delete"]

ACTIONS: tuple[Action, ...] = ("create", "update", "delete")

DEFAULT_MANAGE_INSTRUCTIONS = (
    "Proactively call this tool when you:\n\n"
    "1. Identify a new USER preference.\n"
    "2. Receive an explicit USER request to remember something or otherwise alter your behavior.\n"
    "3. Are working and want to record important context.\n"
    "4. Identify that an existing MEMORY is incorrect or outdated.\n"
)


# ----------------------------------------------------------------------------- flows


def _need_content(content: str | None, action: str) -> str:
    """The memory text ``action`` needs, or an error the model can fix."""
    if content is None or not str(content).strip():
        raise ToolInputError(f"action {action!r} needs the memory text in 'content'")
    return content


def _open_fact(env: ToolEnv, memory_id: str, action: str) -> Flow[tuple[Fact, bool]]:
    """The current fact for ``memory_id`` (migrating a langmem item) and whether it was migrated."""
    tier = SemanticMemory(env.store, namespace=env.root)
    fact: Fact | None = yield from call(tier, "get", memory_id)
    if fact is not None:
        if fact.valid_to is not None:
            if fact.superseded_by:
                raise ToolInputError(
                    f"memory {memory_id} is an old version: it was superseded by "
                    f"{fact.superseded_by}; {action} that id instead"
                )
            raise ToolInputError(f"memory {memory_id} was already deleted; nothing to {action}")
        return fact, False
    migrated = yield from migrate_langmem_item(env, memory_id)
    if migrated is None:
        raise ToolInputError(
            f"no memory with id {memory_id!r}; search_memory to find the id of the memory to {action}"
        )
    return migrated, True


def _manage_flow(
    env: ToolEnv, content: str | None, action: str, memory_id: str | None
) -> Flow[str]:
    """create / update (supersede) / delete (end) one memory."""
    tier = SemanticMemory(env.store, namespace=env.root)
    if action == "create":
        if memory_id is not None:
            raise ToolInputError(
                "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, "
                "omitting the id argument."
            )
        created: Fact = yield from call(
            tier, "remember", _need_content(content, action), attribution=env.attribution
        )
        return f"created memory {created.id}"
    if not memory_id:
        raise ToolInputError(f"You must provide a MEMORY ID when {action.rstrip('e')}ing a MEMORY.")
    memory_id = str(memory_id)
    text = _need_content(content, action) if action == "update" else None
    old, migrated = yield from _open_fact(env, memory_id, action)
    # Close strictly after the old fact started, even when it was written this millisecond.
    at = max(utc_now(), old.valid_from + timedelta(milliseconds=1))
    if action == "update":
        new: Fact = yield from call(
            tier, "supersede", old.id, text, valid_from=at, attribution=env.attribution
        )
        message = f"updated memory {new.id} (supersedes {memory_id}, kept as history)"
    else:
        yield from call(tier, "end", old.id, at, attribution=env.attribution)
        message = (
            f"deleted memory {memory_id} (ended now; still visible to as_of searches before now)"
        )
    if migrated:
        yield from call(env.store, "delete", env.root, memory_id)
    return message


def _search_flow(
    env: ToolEnv,
    query: str,
    limit: int,
    offset: int,
    filter: Mapping[str, Any] | None,
    as_of: str | None,
) -> Flow[list[Hit]]:
    """Facts valid at ``as_of`` (default now) plus langmem items, ranked, one page."""
    check_page(limit, offset)
    # The stores' filter rules: ``{"$or": ...}`` and unknown operators are errors.
    check_filter(filter)
    meta_filter = dict(filter or {})
    when = parse_time(as_of, "as_of")
    text_query = query if isinstance(query, str) and query.strip() else None
    need = offset + limit
    tier = SemanticMemory(env.store, namespace=env.root)
    facts: list[Fact] = yield from call(
        tier, "recall", text_query, as_of=when, k=need, filter=meta_filter
    )
    hits = [Hit(f.id, f.text, f.valid_from, f.valid_to, f.score) for f in facts]
    hits += yield from langmem_hits(env, text_query, need, meta_filter, when)
    if text_query is None:
        hits.sort(key=lambda h: h.valid_from, reverse=True)
    else:
        hits.sort(key=lambda h: (h.score or 0.0, h.valid_from), reverse=True)
    return hits[offset:need]


# ----------------------------------------------------------------------------- tools


def create_manage_memory_tool(
    namespace: tuple[str, ...] | str,
    *,
    instructions: str = DEFAULT_MANAGE_INSTRUCTIONS,
    schema: type = str,
    actions_permitted: Sequence[Action] | None = ACTIONS,
    store: BaseStore | None = None,
    name: str = "manage_memory",
) -> StructuredTool:
    """A ``manage_memory`` tool (create/update/delete) shaped like langmem's, on SemanticMemory.

    ``update`` supersedes and ``delete`` ends the fact (history kept; see the package docstring);
    unknown ids are errors. ``schema`` is accepted for signature compatibility and must be ``str``.
    """
    if schema is not str:
        raise InvalidArgumentTypeError(
            "create_manage_memory_tool stores text memories: schema must be str"
        )
    actions = tuple(actions_permitted or ())
    if not actions or any(a not in ACTIONS for a in actions):
        raise InvalidArgumentError(
            f"actions_permitted must be a non-empty subset of {ACTIONS}, got {actions_permitted!r}"
        )

    def manage(env: ToolEnv, content: str | None, action: str, memory_id: str | None) -> Flow[str]:
        """Reject an action this tool does not permit before anything is read or written."""
        if action not in actions:
            raise ToolException(f"Invalid action {action!r}. Must be one of {list(actions)}.")
        return _manage_flow(env, content, action, memory_id)

    if len(actions) == 1:
        verbs = f"{actions[0].capitalize()} a memory"
    else:
        verbs = ", ".join((actions[0].capitalize(), *actions[1:-1])) + f" or {actions[-1]} a memory"
    description = (
        f"{verbs} to persist across conversations.\n"
        "Include the MEMORY ID when updating or deleting a MEMORY. Omit when creating a new MEMORY "
        "- it will be created for you.\n"
        "Updating keeps the old text as history and gives the memory a new ID (returned); "
        "deleting marks it as no longer true from now on.\n"
        f"{instructions}"
    )
    args = [
        Arg("content", str | None, "The memory text. Required for create and update.", None),
        Arg(
            "action",
            Literal[actions],
            "create a new memory, update (correct) one, or delete one.",
            "create" if "create" in actions else actions[0],
        ),
        Arg(
            "id",
            str | None,
            "ID of the existing memory to update or delete; omit for create.",
            None,
            keyword_only=True,
        ),
    ]
    return build_tool(
        ToolSpec(name, description, args, manage),
        template=NamespaceTemplate(namespace),
        store=store,
    )


def create_search_memory_tool(
    namespace: tuple[str, ...] | str,
    *,
    instructions: str = "",
    store: BaseStore | None = None,
    response_format: ResponseFormat = "content",
    name: str = "search_memory",
) -> StructuredTool:
    """A ``search_memory`` tool shaped like langmem's, returning compact JSON, with ``as_of``.

    With ``response_format="content_and_artifact"`` the artifact is the list of result dicts.
    """

    def search(
        env: ToolEnv,
        query: str,
        limit: int,
        offset: int,
        filter: dict[str, Any] | None,
        as_of: str | None,
    ) -> Flow[str | tuple[str, list[dict[str, Any]]]]:
        """One page of hits as JSON (and, for ``content_and_artifact``, as dicts too)."""
        hits = yield from _search_flow(env, query, limit, offset, filter, as_of)
        rows = [hit.to_dict() for hit in hits]
        return (to_json(rows), rows) if response_format == "content_and_artifact" else to_json(rows)

    args = [
        Arg("query", str, "What to look for, in natural language."),
        Arg("limit", int, "Maximum number of memories to return.", 10, keyword_only=True),
        Arg("offset", int, "Number of results to skip (paging).", 0, keyword_only=True),
        Arg(
            "filter",
            dict[str, Any] | None,
            'Optional metadata filter, e.g. {"topic": "food"} or '
            '{"priority": {"$gte": 2}}; operators $eq $ne $gt $gte $lt $lte.',
            None,
            keyword_only=True,
        ),
        Arg(
            "as_of",
            str | None,
            "Optional ISO 8601 date/time: return what was believed true then "
            "(before later corrections). Omit for the current memories.",
            None,
            keyword_only=True,
        ),
    ]
    description = (
        "Search your long-term memories for information relevant to your current context. "
        "Returns JSON [{id, text, valid_from, valid_to, score}]; valid_to is null while a memory "
        f"still holds. {instructions}"
    ).strip()
    return build_tool(
        ToolSpec(name, description, args, search),
        template=NamespaceTemplate(namespace),
        store=store,
        response_format=response_format,
    )
