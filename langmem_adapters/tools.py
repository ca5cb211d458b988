"""Agent memory tools: LangChain tools that let a LangGraph agent save, search and correct its memory.

``create_manage_memory_tool`` and ``create_search_memory_tool`` are named and shaped like langmem's
tools of the same names (tool names ``manage_memory`` / ``search_memory``; arguments ``content``,
``action`` in ``create``/``update``/``delete``, ``id``; ``query``, ``limit``, ``offset``,
``filter``), so a langmem user switches by changing the import. They are backed by
:class:`~langmem_adapters.memory.SemanticMemory`, which keeps facts under ``(*root, "semantic")``
where ``root`` is the filled namespace template. Differences from langmem, on purpose:

* ``update`` *supersedes* the fact and ``delete`` *ends* it: nothing is overwritten or removed, so
  ``search_memory(..., as_of=...)`` still answers what was believed at an earlier time. The result
  of ``update`` names the id of the new version (``"updated memory <new id>"``); update it next time.
* ``update``/``delete`` of an unknown id, or of a version that was already superseded or ended,
  return an error message to the model instead of silently creating an item.
* Search results are compact JSON: ``[{"id", "text", "valid_from", "valid_to", "score"}]`` with ISO
  8601 times (``valid_to`` is ``null`` while the memory still holds); ``filter`` applies to a
  fact's ``metadata``. Memory content is text (``schema`` other than ``str`` is not supported).

langmem interoperability. langmem's tools store ``{"content": ...}`` items directly under
``root``. Our tools treat those as memories too: ``search_memory`` also reads items whose namespace
is exactly ``root`` and whose value has ``content`` and no ``kind`` (valid from their
``updated_at``; ``filter`` applies to their other top-level fields; with ``as_of`` only items last
written by then are shown). ``update``/``delete`` of such an id *migrates* it first: its content is
recorded as a fact valid and recorded from the item's ``updated_at`` (metadata ``langmem_id``),
that fact is then superseded or ended, and the root item is removed - so the old text stays in the
history and point-in-time search works. Migration is not atomic with respect to a concurrent
writer of the same langmem item. The other way round, langmem's search tool searches ``root`` as a
prefix, so it returns our facts (their value carries the text under ``text``), as well as
superseded versions and end markers; its manage tool cannot update or delete our facts (it writes
under ``root``, not ``(*root, "semantic")``).

Namespaces. A namespace is a tuple of labels in which ``{name}`` fields, e.g. ``("memories",
"{user_id}")``, are filled per call from the LangGraph runtime context (``invoke(...,
context={"user_id": ...})``, a mapping or an object with attributes) and then from
``config["configurable"]``. A missing value raises :class:`NamespaceTemplateError` naming it; it
is a set-up error the model cannot fix, so it is raised to the caller, not shown to the model.

The store is the ``store`` argument, else the graph's store (injected by ``ToolNode`` through
``ToolRuntime``, or ``langgraph.config.get_store()``); with neither, :class:`MemoryToolConfigError`.
Errors the model can fix (bad action, missing id, unknown id, bad filter or date) come back to it as
a tool error message and change nothing. Every tool works with ``invoke`` and ``ainvoke``; the async
path uses the tiers' async twins. Writes are attributed to the tool name, the LangGraph thread id
(``run_id``) and the tool call id (``trace_id``).

``create_memory_tools`` returns a coherent set across tiers: the two semantic tools plus
``record_episode`` / ``search_episodes`` (episodic) and ``read_instructions`` /
``update_instructions`` (procedural, versioned).
"""

import json
import string
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal, TypeVar, cast

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.config import get_config
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import get_runtime
from langgraph.store.base import BaseStore, InvalidNamespaceError
from pydantic import Field, ValidationError

from langmem_adapters.errors import (
    ConcurrentWriteError,
    InvalidFilterError,
    InvalidValueError,
    NonJSONValueError,
)
from langmem_adapters.memory import (
    Attribution,
    Episode,
    EpisodicMemory,
    Fact,
    InvalidMemoryQueryError,
    InvalidMemoryWriteError,
    MemoryTypeError,
    ProceduralMemory,
    Procedure,
    RecordNotFoundError,
    SemanticMemory,
)
from langmem_adapters.memory.checks import check_filter, validate_root
from langmem_adapters.memory.matching import lexical_score, matches_filter
from langmem_adapters.memory.times import utc_now

__all__ = [
    "MemoryToolConfigError",
    "NamespaceTemplateError",
    "create_manage_memory_tool",
    "create_memory_tools",
    "create_search_memory_tool",
]

T = TypeVar("T")

Action = Literal["create", "update", "delete"]
Tier = Literal["semantic", "episodic", "procedural"]

_ACTIONS: tuple[Action, ...] = ("create", "update", "delete")
_TIERS: tuple[Tier, ...] = ("semantic", "episodic", "procedural")

DEFAULT_MANAGE_INSTRUCTIONS = (
    "Proactively call this tool when you:\n\n"
    "1. Identify a new USER preference.\n"
    "2. Receive an explicit USER request to remember something or otherwise alter your behavior.\n"
    "3. Are working and want to record important context.\n"
    "4. Identify that an existing MEMORY is incorrect or outdated.\n"
)


class MemoryToolConfigError(RuntimeError):
    """The tool cannot run as configured (no store available); a set-up error, not the model's."""


class NamespaceTemplateError(ValueError):
    """A namespace template field has no value (or an unusable one) in the context or config."""


class _ModelError(ValueError):
    """Bad tool input the model can correct; reported to it as a tool error."""


#: Errors caused by the model's arguments: turned into a ToolException so the model sees them.
_MODEL_ERRORS: tuple[type[Exception], ...] = (
    _ModelError,
    RecordNotFoundError,
    ConcurrentWriteError,
    InvalidMemoryWriteError,
    InvalidMemoryQueryError,
    MemoryTypeError,
    InvalidFilterError,
    InvalidValueError,
    NonJSONValueError,
)


# ----------------------------------------------------------------------------- namespace templates


class _Template:
    """A namespace whose labels may contain ``{name}`` fields filled per call."""

    def __init__(self, namespace: Sequence[str] | str) -> None:
        labels = (namespace,) if isinstance(namespace, str) else tuple(namespace)
        if not labels or not all(isinstance(label, str) for label in labels):
            raise TypeError(
                f"namespace must be a non-empty tuple of strings such as ('memories', '{{user_id}}'), "
                f"got {namespace!r}"
            )
        names: list[str] = []
        for label in labels:
            for _, name, _, _ in string.Formatter().parse(label):
                if name is None:
                    continue
                if not name.isidentifier():
                    raise ValueError(
                        f"namespace template field {{{name}}} in {label!r} must be a plain name "
                        "such as {user_id}"
                    )
                if name not in names:
                    names.append(name)
        self.labels = labels
        self.names = tuple(names)
        if not names:
            validate_root(labels)

    def fill(self, context: Any, configurable: Mapping[str, Any]) -> tuple[str, ...]:
        """The namespace with every field taken from ``context``, else from ``configurable``."""
        if not self.names:
            return self.labels
        values: dict[str, str] = {}
        for name in self.names:
            value = _context_value(context, name)
            if value is None:
                value = configurable.get(name)
            if value is None:
                raise NamespaceTemplateError(
                    f"namespace template {self.labels!r} needs {name!r}: pass it in the run's "
                    f"context (invoke(..., context={{{name!r}: ...}})) or in "
                    f"config['configurable'][{name!r}]; context has {_public_keys(context)}, "
                    f"configurable has {_public_keys(configurable)}"
                )
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise NamespaceTemplateError(
                    f"namespace template value {name!r} must be a string or an integer, "
                    f"got {type(value).__name__}"
                )
            values[name] = str(value)
        root = tuple(label.format_map(values) for label in self.labels)
        try:
            return validate_root(root)
        except (InvalidNamespaceError, MemoryTypeError) as exc:
            raise NamespaceTemplateError(
                f"namespace {root!r} filled from template {self.labels!r} is invalid: {exc}"
            ) from exc


def _context_value(context: Any, name: str) -> Any:
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def _public_keys(source: Any) -> list[str]:
    if source is None:
        return []
    keys = (
        source.keys()
        if isinstance(source, Mapping)
        else vars(source)
        if hasattr(source, "__dict__")
        else []
    )
    return sorted(str(k) for k in keys if not str(k).startswith("__"))


# ----------------------------------------------------------------------------- call environment


@dataclass(frozen=True)
class _Env:
    """What one tool call runs against: the store, the filled namespace and the attribution."""

    store: BaseStore
    root: tuple[str, ...]
    attribution: Attribution
    thread_id: str | None = None


def _environment(
    template: _Template, store: BaseStore | None, runtime: ToolRuntime | None, tool_name: str
) -> _Env:
    """Resolve store, namespace and attribution from the tool's arguments and the running graph."""
    config: Mapping[str, Any]
    if runtime is not None:
        config = runtime.config or {}
        context = runtime.context
        graph_store = runtime.store
        tool_call_id = runtime.tool_call_id
    else:
        try:
            config = get_config()
        except RuntimeError:
            config = {}
        try:
            graph_runtime: Any = get_runtime()
        except (RuntimeError, KeyError):
            graph_runtime = None
        context = getattr(graph_runtime, "context", None)
        graph_store = getattr(graph_runtime, "store", None)
        tool_call_id = None
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    resolved = store if store is not None else graph_store
    if resolved is None:
        raise MemoryToolConfigError(
            f"{tool_name}: no store - pass store= to the tool factory or compile the graph "
            "with store=..."
        )
    root = template.fill(context, configurable)
    thread = configurable.get("thread_id")
    thread_id = None if thread is None else str(thread)
    return _Env(
        store=resolved,
        root=root,
        attribution=Attribution(author=tool_name, run_id=thread_id, trace_id=tool_call_id),
        thread_id=thread_id,
    )


# ----------------------------------------------------------------------------- sync/async flows


@dataclass(frozen=True)
class _Op:
    """A call of a public tier or store method; the async runner awaits its ``a``-prefixed twin."""

    target: Any
    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


_Flow = Generator[_Op, Any, T]


def _do(target: Any, method: str, *args: Any, **kwargs: Any) -> Generator[_Op, Any, Any]:
    """Request ``target.method(*args, **kwargs)`` (or its async twin) from inside a flow."""
    return (yield _Op(target, method, args, kwargs))


def _drive(flow: _Flow[T]) -> T:
    """Run a flow on the sync APIs; errors of a call are thrown back into the flow."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            op = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)
        value, error = None, None
        try:
            value = getattr(op.target, op.method)(*op.args, **op.kwargs)
        except Exception as exc:
            error = exc


async def _adrive(flow: _Flow[T]) -> T:
    """Run a flow on the async twins (``aget``, ``arecall``...)."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            op = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return cast(T, stop.value)
        value, error = None, None
        try:
            value = await getattr(op.target, "a" + op.method)(*op.args, **op.kwargs)
        except Exception as exc:
            error = exc


def _run_sync(flow: _Flow[T]) -> T:
    try:
        return _drive(flow)
    except _MODEL_ERRORS as exc:
        raise ToolException(str(exc)) from exc


async def _run_async(flow: _Flow[T]) -> T:
    try:
        return await _adrive(flow)
    except _MODEL_ERRORS as exc:
        raise ToolException(str(exc)) from exc


# ----------------------------------------------------------------------------- argument helpers


def _validation_message(tool_name: str) -> Callable[[ValidationError], str]:
    """Format pydantic argument errors as one line the model can act on."""

    def handle(error: ValidationError) -> str:
        problems = []
        for err in error.errors():
            where = ".".join(str(part) for part in err.get("loc", ())) or "arguments"
            problems.append(f"{where}: {err.get('msg', 'invalid')} (got {err.get('input')!r})")
        return (
            f"Invalid arguments for {tool_name}: " + "; ".join(problems) + ". Nothing was changed."
        )

    return handle


def _parse_time(value: str | None, what: str) -> datetime | None:
    """An ISO 8601 date or datetime from the model; naive values are taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _ModelError(f"{what} must be an ISO 8601 date/time string, got {value!r}")
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _ModelError(
            f"{what} must be an ISO 8601 date or date-time such as 2024-05-01T12:00:00Z, got {value!r}"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _check_page(limit: int, offset: int) -> None:
    if limit < 1:
        raise _ModelError(f"limit must be at least 1, got {limit}")
    if offset < 0:
        raise _ModelError(f"offset must be 0 or more, got {offset}")


def _check_search_filter(filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validate a metadata filter with the stores' rules (``{"$or": ...}`` and unknown operators are
    errors) and return it for the semantic tier."""
    check_filter(filter)
    return dict(filter or {})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _content_text(content: Any) -> str:
    """The text of a langmem item's content (JSON for structured content)."""
    return content if isinstance(content, str) else _dumps(content)


def _is_langmem_value(value: Any) -> bool:
    return isinstance(value, dict) and "content" in value and "kind" not in value


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


# ----------------------------------------------------------------------------- semantic flows


@dataclass(frozen=True)
class _Hit:
    """One search result in the compact form shown to the model."""

    id: str
    text: str
    valid_from: datetime
    valid_to: datetime | None
    score: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "valid_from": _iso(self.valid_from),
            "valid_to": _iso(self.valid_to),
            "score": None if self.score is None else round(self.score, 4),
        }


def _need_content(content: str | None, action: str) -> str:
    if content is None or not str(content).strip():
        raise _ModelError(f"action {action!r} needs the memory text in 'content'")
    return content


def _migrate_langmem_item(env: _Env, item_id: str) -> _Flow[Fact | None]:
    """Record a langmem ``{"content": ...}`` item under ``root`` as a fact; ``None`` if absent.

    The fact is valid and recorded from the item's ``updated_at`` (at least 1 ms in the past, so
    it can be superseded or ended now). The caller removes the root item after closing the fact.
    """
    item = yield from _do(env.store, "get", env.root, item_id)
    if item is None or not _is_langmem_value(item.value):
        return None
    since = min(_aware(item.updated_at), utc_now() - timedelta(milliseconds=1))
    extras = {k: v for k, v in item.value.items() if k != "content"}
    migrated = SemanticMemory(env.store, namespace=env.root, clock=lambda: since)
    fact: Fact = yield from _do(
        migrated,
        "remember",
        _content_text(item.value["content"]),
        attribution=Attribution(author="langmem", run_id=env.attribution.run_id),
        metadata={**extras, "langmem_id": item_id},
    )
    return fact


def _open_fact(env: _Env, memory_id: str, action: str) -> _Flow[tuple[Fact, bool]]:
    """The current fact for ``memory_id`` (migrating a langmem item) and whether it was migrated."""
    tier = SemanticMemory(env.store, namespace=env.root)
    fact: Fact | None = yield from _do(tier, "get", memory_id)
    if fact is not None:
        if fact.valid_to is not None:
            if fact.superseded_by:
                raise _ModelError(
                    f"memory {memory_id} is an old version: it was superseded by "
                    f"{fact.superseded_by}; {action} that id instead"
                )
            raise _ModelError(f"memory {memory_id} was already deleted; nothing to {action}")
        return fact, False
    migrated = yield from _migrate_langmem_item(env, memory_id)
    if migrated is None:
        raise _ModelError(
            f"no memory with id {memory_id!r}; search_memory to find the id of the memory to {action}"
        )
    return migrated, True


def _manage_flow(env: _Env, content: str | None, action: str, memory_id: str | None) -> _Flow[str]:
    """create / update (supersede) / delete (end) one memory."""
    tier = SemanticMemory(env.store, namespace=env.root)
    if action == "create":
        if memory_id is not None:
            raise _ModelError(
                "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, "
                "omitting the id argument."
            )
        created: Fact = yield from _do(
            tier, "remember", _need_content(content, action), attribution=env.attribution
        )
        return f"created memory {created.id}"
    if not memory_id:
        raise _ModelError(f"You must provide a MEMORY ID when {action.rstrip('e')}ing a MEMORY.")
    memory_id = str(memory_id)
    text = _need_content(content, action) if action == "update" else None
    old, migrated = yield from _open_fact(env, memory_id, action)
    # Close strictly after the old fact started, even when it was written this millisecond.
    at = max(utc_now(), old.valid_from + timedelta(milliseconds=1))
    if action == "update":
        new: Fact = yield from _do(
            tier, "supersede", old.id, text, valid_from=at, attribution=env.attribution
        )
        message = f"updated memory {new.id} (supersedes {memory_id}, kept as history)"
    else:
        yield from _do(tier, "end", old.id, at, attribution=env.attribution)
        message = (
            f"deleted memory {memory_id} (ended now; still visible to as_of searches before now)"
        )
    if migrated:
        yield from _do(env.store, "delete", env.root, memory_id)
    return message


def _langmem_hits(
    env: _Env,
    query: str | None,
    need: int,
    meta_filter: dict[str, Any],
    as_of: datetime | None,
) -> _Flow[list[_Hit]]:
    """langmem-style items stored directly under ``root`` (see the module docstring)."""
    page_size = max(need, 50)
    offset = 0
    ranked = False
    hits: list[_Hit] = []
    while True:
        page = yield from _do(
            env.store,
            "search",
            env.root,
            query=query,
            filter={"kind": {"$ne": "fact"}},
            limit=page_size,
            offset=offset,
        )
        ranked = ranked or any(item.score is not None for item in page)
        for item in page:
            if tuple(item.namespace) != env.root or not _is_langmem_value(item.value):
                continue
            since = _aware(item.updated_at)
            extras = {k: v for k, v in item.value.items() if k != "content"}
            if (as_of is not None and since > as_of) or not matches_filter(
                extras, check_filter(meta_filter)
            ):
                continue
            text = _content_text(item.value["content"])
            score = item.score
            if query is not None and score is None:
                score = lexical_score(query, text)
            hits.append(_Hit(item.key, text, since, None, score))
        if len(page) < page_size or (ranked and len(hits) >= need):
            return hits
        offset += len(page)


def _search_flow(
    env: _Env,
    query: str,
    limit: int,
    offset: int,
    filter: Mapping[str, Any] | None,
    as_of: str | None,
) -> _Flow[list[_Hit]]:
    """Facts valid at ``as_of`` (default now) plus langmem items, ranked, one page."""
    _check_page(limit, offset)
    meta_filter = _check_search_filter(filter)
    when = _parse_time(as_of, "as_of")
    text_query = query if isinstance(query, str) and query.strip() else None
    need = offset + limit
    tier = SemanticMemory(env.store, namespace=env.root)
    facts: list[Fact] = yield from _do(
        tier, "recall", text_query, as_of=when, k=need, filter=meta_filter
    )
    hits = [_Hit(f.id, f.text, f.valid_from, f.valid_to, f.score) for f in facts]
    hits += yield from _langmem_hits(env, text_query, need, meta_filter, when)
    if text_query is None:
        hits.sort(key=lambda h: h.valid_from, reverse=True)
    else:
        hits.sort(key=lambda h: (h.score or 0.0, h.valid_from), reverse=True)
    return hits[offset:need]


# ----------------------------------------------------------------------------- semantic tools


def _tool(
    func: Callable[..., Any],
    coroutine: Callable[..., Any],
    *,
    name: str,
    description: str,
    response_format: Literal["content", "content_and_artifact"] = "content",
) -> StructuredTool:
    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=description,
        response_format=response_format,
        handle_tool_error=True,
        handle_validation_error=_validation_message(name),
    )


def create_manage_memory_tool(
    namespace: tuple[str, ...] | str,
    *,
    instructions: str = DEFAULT_MANAGE_INSTRUCTIONS,
    schema: type = str,
    actions_permitted: Sequence[Action] | None = _ACTIONS,
    store: BaseStore | None = None,
    name: str = "manage_memory",
) -> StructuredTool:
    """A ``manage_memory`` tool (create/update/delete) shaped like langmem's, on SemanticMemory.

    ``update`` supersedes and ``delete`` ends the fact (history kept; see the module docstring);
    unknown ids are errors. ``schema`` is accepted for signature compatibility and must be ``str``.
    """
    if schema is not str:
        raise TypeError("create_manage_memory_tool stores text memories: schema must be str")
    actions = tuple(actions_permitted or ())
    if not actions or any(a not in _ACTIONS for a in actions):
        raise ValueError(
            f"actions_permitted must be a non-empty subset of {_ACTIONS}, got {actions_permitted!r}"
        )
    template = _Template(namespace)
    default_action = "create" if "create" in actions else actions[0]

    def manage_memory(
        content: str | None = None,
        action: str = default_action,
        *,
        id: str | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, name)
        return _run_sync(_manage_flow(env, content, _permitted(action, actions), id))

    async def amanage_memory(
        content: str | None = None,
        action: str = default_action,
        *,
        id: str | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, name)
        return await _run_async(_manage_flow(env, content, _permitted(action, actions), id))

    annotations = {
        "content": Annotated[
            str | None,
            Field(description="The memory text. Required for create and update."),
        ],
        "action": Annotated[
            Literal[actions],
            Field(description="create a new memory, update (correct) one, or delete one."),
        ],
        "id": Annotated[
            str | None,
            Field(description="ID of the existing memory to update or delete; omit for create."),
        ],
    }
    for func in (manage_memory, amanage_memory):
        func.__annotations__.update(annotations)

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
    return _tool(manage_memory, amanage_memory, name=name, description=description)


def _permitted(action: str, actions: tuple[str, ...]) -> str:
    if action not in actions:
        raise ToolException(f"Invalid action {action!r}. Must be one of {list(actions)}.")
    return action


def create_search_memory_tool(
    namespace: tuple[str, ...] | str,
    *,
    instructions: str = "",
    store: BaseStore | None = None,
    response_format: Literal["content", "content_and_artifact"] = "content",
    name: str = "search_memory",
) -> StructuredTool:
    """A ``search_memory`` tool shaped like langmem's, returning compact JSON, with ``as_of``.

    With ``response_format="content_and_artifact"`` the artifact is the list of result dicts.
    """
    template = _Template(namespace)

    def result(hits: list[_Hit]) -> Any:
        rows = [hit.to_dict() for hit in hits]
        return (_dumps(rows), rows) if response_format == "content_and_artifact" else _dumps(rows)

    def search_memory(
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: dict[str, Any] | None = None,
        as_of: str | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> Any:
        env = _environment(template, store, runtime, name)
        return result(_run_sync(_search_flow(env, query, limit, offset, filter, as_of)))

    async def asearch_memory(
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: dict[str, Any] | None = None,
        as_of: str | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> Any:
        env = _environment(template, store, runtime, name)
        return result(await _run_async(_search_flow(env, query, limit, offset, filter, as_of)))

    annotations = {
        "query": Annotated[str, Field(description="What to look for, in natural language.")],
        "limit": Annotated[int, Field(description="Maximum number of memories to return.")],
        "offset": Annotated[int, Field(description="Number of results to skip (paging).")],
        "filter": Annotated[
            dict[str, Any] | None,
            Field(
                description='Optional metadata filter, e.g. {"topic": "food"} or '
                '{"priority": {"$gte": 2}}; operators $eq $ne $gt $gte $lt $lte.'
            ),
        ],
        "as_of": Annotated[
            str | None,
            Field(
                description="Optional ISO 8601 date/time: return what was believed true then "
                "(before later corrections). Omit for the current memories."
            ),
        ],
    }
    for func in (search_memory, asearch_memory):
        func.__annotations__.update(annotations)
    description = (
        "Search your long-term memories for information relevant to your current context. "
        "Returns JSON [{id, text, valid_from, valid_to, score}]; valid_to is null while a memory "
        f"still holds. {instructions}"
    ).strip()
    return _tool(
        search_memory,
        asearch_memory,
        name=name,
        description=description,
        response_format=response_format,
    )


# ----------------------------------------------------------------------------- episodic tools


def _episode_dict(episode: Episode) -> dict[str, Any]:
    return {
        "id": episode.id,
        "text": episode.text,
        "occurred_at": _iso(episode.occurred_at),
        "outcome": episode.outcome,
        "success": episode.success,
        "score": None if episode.score is None else round(episode.score, 4),
    }


def _record_flow(env: _Env, text: str, outcome: str | None, success: bool | None) -> _Flow[str]:
    log = EpisodicMemory(env.store, namespace=env.root)
    episode: Episode = yield from _do(
        log,
        "record",
        text,
        outcome=outcome,
        success=success,
        thread_id=env.thread_id,
        attribution=env.attribution,
    )
    return f"recorded episode {episode.id}"


def _episodes_flow(
    env: _Env,
    query: str | None,
    limit: int,
    since: str | None,
    until: str | None,
    success: bool | None,
) -> _Flow[str]:
    _check_page(limit, 0)
    log = EpisodicMemory(env.store, namespace=env.root)
    text_query = query if isinstance(query, str) and query.strip() else None
    episodes: list[Episode] = yield from _do(
        log,
        "recall",
        text_query,
        since=_parse_time(since, "since"),
        until=_parse_time(until, "until"),
        k=limit,
        success=success,
    )
    return _dumps([_episode_dict(e) for e in episodes])


def _episodic_tools(template: _Template, store: BaseStore | None) -> list[BaseTool]:
    def record_episode(
        text: Annotated[str, Field(description="What happened, in one or two sentences.")],
        outcome: Annotated[
            str | None, Field(description="How it turned out, e.g. 'user satisfied'.")
        ] = None,
        success: Annotated[
            bool | None, Field(description="Whether it went well, if known.")
        ] = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "record_episode")
        return _run_sync(_record_flow(env, text, outcome, success))

    async def arecord_episode(
        text: str,
        outcome: str | None = None,
        success: bool | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "record_episode")
        return await _run_async(_record_flow(env, text, outcome, success))

    def search_episodes(
        query: Annotated[
            str | None, Field(description="What to look for; omit for the most recent episodes.")
        ] = None,
        limit: Annotated[int, Field(description="Maximum number of episodes.")] = 5,
        since: Annotated[
            str | None, Field(description="Only episodes at or after this ISO 8601 date/time.")
        ] = None,
        until: Annotated[
            str | None, Field(description="Only episodes before this ISO 8601 date/time.")
        ] = None,
        success: Annotated[
            bool | None, Field(description="Only successful (true) or failed (false) episodes.")
        ] = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "search_episodes")
        return _run_sync(_episodes_flow(env, query, limit, since, until, success))

    async def asearch_episodes(
        query: str | None = None,
        limit: int = 5,
        since: str | None = None,
        until: str | None = None,
        success: bool | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "search_episodes")
        return await _run_async(_episodes_flow(env, query, limit, since, until, success))

    return [
        _tool(
            record_episode,
            arecord_episode,
            name="record_episode",
            description=(
                "Record something that happened in this conversation (a task done, a problem hit, "
                "a decision made) and how it went, so future conversations can learn from it. "
                "Episodes are a log: they are never edited."
            ),
        ),
        _tool(
            search_episodes,
            asearch_episodes,
            name="search_episodes",
            description=(
                "Search past episodes (what happened before and how it went), ranked by relevance "
                "and recency. Returns JSON [{id, text, occurred_at, outcome, success, score}]."
            ),
        ),
    ]


# ----------------------------------------------------------------------------- procedural tools


def _procedure_dict(procedure: Procedure) -> dict[str, Any]:
    return {
        "name": procedure.name,
        "version": procedure.version,
        "text": procedure.text,
        "recorded_at": _iso(procedure.recorded_at),
    }


def _read_flow(env: _Env, name: str, as_of: str | None) -> _Flow[str]:
    skills = ProceduralMemory(env.store, namespace=env.root)
    when = _parse_time(as_of, "as_of")
    found: Procedure | None
    if when is None:
        found = yield from _do(skills, "current", name)
    else:
        found = yield from _do(skills, "as_of", name, when)
    if found is None:
        return _dumps({"name": name, "version": 0, "text": None})
    return _dumps(_procedure_dict(found))


def _publish_flow(env: _Env, name: str, text: str, expected_version: int | None) -> _Flow[str]:
    skills = ProceduralMemory(env.store, namespace=env.root)
    try:
        published: Procedure = yield from _do(
            skills,
            "publish",
            name,
            text,
            expected_version=expected_version,
            attribution=env.attribution,
        )
    except ConcurrentWriteError:
        current: Procedure | None = yield from _do(skills, "current", name)
        now = 0 if current is None else current.version
        raise _ModelError(
            f"instructions {name!r} are at version {now}, not {expected_version}; "
            "read_instructions again and merge your change"
        ) from None
    return f"published instructions {name!r} version {published.version}"


def _procedural_tools(template: _Template, store: BaseStore | None) -> list[BaseTool]:
    def read_instructions(
        name: Annotated[str, Field(description="Name of the instruction set, e.g. 'tone'.")],
        as_of: Annotated[
            str | None,
            Field(description="Optional ISO 8601 date/time: the version that was current then."),
        ] = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "read_instructions")
        return _run_sync(_read_flow(env, name, as_of))

    async def aread_instructions(
        name: str,
        as_of: str | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "read_instructions")
        return await _run_async(_read_flow(env, name, as_of))

    def update_instructions(
        name: Annotated[str, Field(description="Name of the instruction set.")],
        text: Annotated[str, Field(description="The complete new instructions (not a diff).")],
        expected_version: Annotated[
            int | None,
            Field(
                description="The version you read (0 if none existed); the update fails if "
                "someone changed the instructions since."
            ),
        ] = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "update_instructions")
        return _run_sync(_publish_flow(env, name, text, expected_version))

    async def aupdate_instructions(
        name: str,
        text: str,
        expected_version: int | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]
    ) -> str:
        env = _environment(template, store, runtime, "update_instructions")
        return await _run_async(_publish_flow(env, name, text, expected_version))

    return [
        _tool(
            read_instructions,
            aread_instructions,
            name="read_instructions",
            description=(
                "Read a named set of your own instructions (how to behave for this user or task). "
                "Returns JSON {name, version, text, recorded_at}; version 0 and text null if it "
                "does not exist yet."
            ),
        ),
        _tool(
            update_instructions,
            aupdate_instructions,
            name="update_instructions",
            description=(
                "Replace a named set of your own instructions with an improved complete version, "
                "e.g. after user feedback. Read them first and pass the version you read as "
                "expected_version. Every version is kept."
            ),
        ),
    ]


# ----------------------------------------------------------------------------- tool sets


def create_memory_tools(
    namespace: tuple[str, ...] | str,
    *,
    tiers: Sequence[Tier] = _TIERS,
    store: BaseStore | None = None,
) -> list[BaseTool]:
    """A coherent set of memory tools over the chosen tiers, all in one namespace.

    ``semantic``: ``manage_memory``, ``search_memory``; ``episodic``: ``record_episode``,
    ``search_episodes``; ``procedural``: ``read_instructions``, ``update_instructions``.
    """
    chosen = tuple(tiers)
    unknown = [t for t in chosen if t not in _TIERS]
    if not chosen or unknown:
        raise ValueError(f"tiers must be a non-empty subset of {_TIERS}, got {tiers!r}")
    template = _Template(namespace)
    tools: list[BaseTool] = []
    if "semantic" in chosen:
        tools.append(create_manage_memory_tool(namespace, store=store))
        tools.append(create_search_memory_tool(namespace, store=store))
    if "episodic" in chosen:
        tools.extend(_episodic_tools(template, store))
    if "procedural" in chosen:
        tools.extend(_procedural_tools(template, store))
    return tools
