"""Agent memory tools on every backend of the shared fixtures, through ``invoke`` and ``ainvoke``.

The agent scenarios run a real ``create_react_agent`` graph compiled with the store under test and
driven by a scripted chat model that emits tool calls. "Changes nothing" is checked by comparing a
snapshot of every item in the store before and after a rejected call.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timezone
from typing import Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from langmem_adapters.errors import MemoryToolConfigError, NamespaceTemplateError
from langmem_adapters.memory import EpisodicMemory, ProceduralMemory, SemanticMemory
from langmem_adapters.tools import (
    create_manage_memory_tool,
    create_memory_tools,
    create_search_memory_tool,
)
from langmem_adapters.tools.templates import NamespaceTemplate as _Template
from tests.stores import AsyncStoreFactory, StoreFactory, hash_index, tick

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

UTC = timezone.utc
TEMPLATE = ("memories", "{user_id}")
ROOT = ("memories", "u1")
CONFIG: RunnableConfig = {"configurable": {"user_id": "u1"}}


def _langmem() -> Any:
    """langmem, a test tool on Python >= 3.11 only (its 0.0.30 needs typing.NotRequired)."""
    return pytest.importorskip("langmem", reason="package missing: langmem")


class Ctx(TypedDict, total=False):
    user_id: str


# ----------------------------------------------------------------------------- helpers


@pytest.fixture(params=["sync", "async"])
def use_async(request: pytest.FixtureRequest) -> bool:
    return request.param == "async"


@pytest.fixture
def new_store(
    use_async: bool, make_store: StoreFactory, make_astore: AsyncStoreFactory
) -> AsyncStoreFactory:
    """``await new_store(...)``: an async store in async mode, a sync store in sync mode."""
    if use_async:
        return make_astore

    async def sync_store(**kwargs: Any) -> BaseStore:
        return make_store(**kwargs)

    return sync_store


_calls = iter(range(1_000_000))


async def call(
    tool: BaseTool, args: dict[str, Any], use_async: bool, config: RunnableConfig | None = None
) -> ToolMessage:
    """Invoke ``tool`` the way ToolNode does (a tool call in, a ToolMessage out)."""
    tool_call = {"type": "tool_call", "id": f"call-{next(_calls)}", "name": tool.name, "args": args}
    config = CONFIG if config is None else config
    result = await tool.ainvoke(tool_call, config) if use_async else tool.invoke(tool_call, config)
    assert isinstance(result, ToolMessage)
    return result


def ok(message: ToolMessage) -> str:
    assert message.status == "success", message.content
    return str(message.content)


def failed(message: ToolMessage) -> str:
    assert message.status == "error", message.content
    return str(message.content)


async def snapshot(store: BaseStore) -> list[tuple[tuple[str, ...], str, str]]:
    """Every item of the store, comparable across calls."""
    items = (
        await store.asearch((), limit=100_000)
        if _is_async(store)
        else store.search((), limit=100_000)
    )
    return sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in items)


def _is_async(store: BaseStore) -> bool:
    return type(store).__name__.startswith("Async")


class Script:
    """An endless iterator of scripted model turns that the test extends between runs."""

    def __init__(self) -> None:
        self.turns: list[AIMessage] = []

    def __iter__(self) -> Iterator[AIMessage]:
        return self

    def __next__(self) -> AIMessage:
        if not self.turns:
            raise AssertionError("the scripted model ran out of turns")
        return self.turns.pop(0)

    def tool_turn(self, name: str, **args: Any) -> None:
        """One model turn calling ``name`` followed by a final answer."""
        self.turns.append(
            AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"tc-{next(_calls)}"}])
        )
        self.turns.append(AIMessage("done"))


class ScriptedModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts ``bind_tools`` (the agent binds its tools)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def make_agent(script: Script, tools: list[BaseTool], store: BaseStore) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            ScriptedModel(messages=script),
            tools,
            store=store,
            checkpointer=InMemorySaver(),
            context_schema=Ctx,
        )


def tool_messages(result: dict[str, Any], *, last_turn: bool = True) -> list[ToolMessage]:
    """The tool results of a run (of its last user turn by default)."""
    messages: list[BaseMessage] = result["messages"]
    if last_turn:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        messages = messages[start:]
    return [m for m in messages if isinstance(m, ToolMessage)]


def rows(message: ToolMessage) -> list[dict[str, Any]]:
    return list(json.loads(ok(message)))


# ----------------------------------------------------------------------------- agent scenarios


async def test_agent_remembers_across_threads_and_sees_corrections_as_of(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store(index=hash_index())
    script = Script()
    agent = make_agent(script, create_memory_tools(TEMPLATE), store)

    async def run(thread: str, **kwargs: Any) -> list[ToolMessage]:
        config = {"configurable": {"thread_id": thread}}
        inputs = {"messages": [("user", "hi")]}
        context = Ctx(user_id="u1")
        if use_async:
            result = await agent.ainvoke(inputs, config, context=context)
        else:
            result = agent.invoke(inputs, config, context=context)
        return tool_messages(result)

    # Thread 1: the user states a preference and the agent stores it.
    script.tool_turn("manage_memory", content="The user prefers green tea")
    [created] = await run("t1")
    tea_id = ok(created).removeprefix("created memory ")
    before_correction = tick()

    # Thread 2: a new conversation finds it.
    script.tool_turn("search_memory", query="what does the user like to drink")
    [found] = await run("t2")
    assert [(r["id"], r["text"], r["valid_to"]) for r in rows(found)] == [
        (tea_id, "The user prefers green tea", None)
    ]

    # Thread 3: a correction supersedes it; an as_of search still sees the old preference.
    script.tool_turn("manage_memory", action="update", id=tea_id, content="The user prefers coffee")
    [updated] = await run("t3")
    coffee_id = ok(updated).split()[2]
    assert coffee_id != tea_id and tea_id in ok(updated)
    script.tool_turn("search_memory", query="user drink preference")
    [now] = await run("t3")
    assert [(r["id"], r["text"]) for r in rows(now)] == [(coffee_id, "The user prefers coffee")]
    script.tool_turn(
        "search_memory", query="user drink preference", as_of=before_correction.isoformat()
    )
    [then] = await run("t3")
    assert [(r["id"], r["text"], r["valid_to"]) for r in rows(then)] == [
        (tea_id, "The user prefers green tea", None)
    ]

    # The old version is history, not gone; it was attributed to its thread and tool call.
    history = SemanticMemory(store, namespace=ROOT)
    lineage = await history.ahistory(coffee_id) if use_async else history.history(coffee_id)
    assert [f.text for f in lineage] == ["The user prefers green tea", "The user prefers coffee"]
    assert lineage[0].superseded_by == coffee_id
    assert lineage[0].attribution.author == "manage_memory"
    assert lineage[0].attribution.run_id == "t1"
    # Thread state is per thread, memory is shared: thread 3 kept its three exchanges.
    state = agent.get_state({"configurable": {"thread_id": "t3"}})
    assert len(tool_messages(state.values, last_turn=False)) == 3


async def test_agent_namespace_from_configurable_and_missing_value(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store()
    script = Script()
    agent = make_agent(script, create_memory_tools(TEMPLATE, tiers=("semantic",)), store)
    script.tool_turn("manage_memory", content="Likes jazz")
    config = {"configurable": {"thread_id": "t1", "user_id": "u2"}}
    inputs = {"messages": [("user", "hi")]}
    result = await agent.ainvoke(inputs, config) if use_async else agent.invoke(inputs, config)
    fact_id = ok(tool_messages(result)[0]).split()[-1]
    tier = SemanticMemory(store, namespace=("memories", "u2"))
    fact = await tier.aget(fact_id) if use_async else tier.get(fact_id)
    assert fact is not None and fact.text == "Likes jazz"

    # No user_id anywhere: the run fails with an error naming the missing value.
    script.turns.clear()
    script.tool_turn("manage_memory", content="Likes blues")
    before = await snapshot(store)
    config = {"configurable": {"thread_id": "t2"}}
    with pytest.raises(NamespaceTemplateError, match="user_id"):
        if use_async:
            await agent.ainvoke(inputs, config)
        else:
            agent.invoke(inputs, config)
    assert await snapshot(store) == before


async def test_tools_use_the_graph_store_through_get_store(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    """Called from inside a plain graph node (no ToolNode injection), the tool uses get_store()."""
    store = await new_store()
    manage = create_manage_memory_tool(TEMPLATE)
    search = create_search_memory_tool(TEMPLATE)

    async def anode(state: MessagesState) -> dict[str, Any]:
        await manage.ainvoke({"content": "Works nights"})
        return {"messages": [AIMessage(await search.ainvoke({"query": "nights"}))]}

    def node(state: MessagesState) -> dict[str, Any]:
        manage.invoke({"content": "Works nights"})
        return {"messages": [AIMessage(search.invoke({"query": "nights"}))]}

    builder = StateGraph(MessagesState, context_schema=Ctx)
    builder.add_node("remember", anode if use_async else node)
    builder.add_edge(START, "remember")
    graph: Any = builder.compile(store=store)
    inputs = {"messages": [("user", "hi")]}
    if use_async:
        result = await graph.ainvoke(inputs, context=Ctx(user_id="u1"))
    else:
        result = graph.invoke(inputs, context=Ctx(user_id="u1"))
    [hit] = json.loads(result["messages"][-1].content)
    assert hit["text"] == "Works nights"

    # Outside any graph and without store=: a clear configuration error.
    with pytest.raises(MemoryToolConfigError, match="no store"):
        if use_async:
            await manage.ainvoke({"content": "x"}, CONFIG)
        else:
            manage.invoke({"content": "x"}, CONFIG)


# ----------------------------------------------------------------------------- manage / search


async def test_manage_and_search_directly(new_store: AsyncStoreFactory, use_async: bool) -> None:
    store = await new_store()
    manage = create_manage_memory_tool(TEMPLATE, store=store)
    search = create_search_memory_tool(TEMPLATE, store=store)

    tea = ok(await call(manage, {"content": "Drinks tea in the morning"}, use_async)).split()[-1]
    ok(await call(manage, {"content": "Plays chess on Sundays"}, use_async))
    hits = rows(await call(search, {"query": "tea morning"}, use_async))
    assert hits[0]["text"] == "Drinks tea in the morning"
    assert set(hits[0]) == {"id", "text", "valid_from", "valid_to", "score"}
    # Paging: limit and offset.
    page1 = rows(await call(search, {"query": "", "limit": 1}, use_async))
    page2 = rows(await call(search, {"query": "", "limit": 1, "offset": 1}, use_async))
    assert len(page1) == len(page2) == 1 and page1[0]["id"] != page2[0]["id"]

    before_delete = tick()
    deleted = ok(await call(manage, {"action": "delete", "id": tea}, use_async))
    assert deleted.startswith(f"deleted memory {tea}")
    assert [h["text"] for h in rows(await call(search, {"query": "tea"}, use_async))] == [
        "Plays chess on Sundays"
    ]
    old = rows(await call(search, {"query": "tea", "as_of": before_delete.isoformat()}, use_async))
    assert "Drinks tea in the morning" in [h["text"] for h in old]
    # A deleted memory cannot be updated or deleted again.
    msg = failed(await call(manage, {"action": "update", "id": tea, "content": "x"}, use_async))
    assert "already deleted" in msg

    # Another user's namespace is separate.
    other = rows(
        await call(search, {"query": "chess"}, use_async, {"configurable": {"user_id": "u9"}})
    )
    assert other == []


async def test_search_filter_applies_to_metadata(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store()
    facts = SemanticMemory(store, namespace=ROOT)
    for text, priority in [("Allergic to nuts", 3), ("Likes cats", 1)]:
        if use_async:
            await facts.aremember(text, metadata={"priority": priority})
        else:
            facts.remember(text, metadata={"priority": priority})
    search = create_search_memory_tool(TEMPLATE, store=store)
    hits = rows(await call(search, {"query": "", "filter": {"priority": {"$gte": 2}}}, use_async))
    assert [h["text"] for h in hits] == ["Allergic to nuts"]
    hits = rows(await call(search, {"query": "", "filter": {"priority": 1}}, use_async))
    assert [h["text"] for h in hits] == ["Likes cats"]


@dataclass
class BadCase:
    tool: str
    args: dict[str, Any]
    expect: str


BAD_INPUT = [
    BadCase(
        "manage",
        {"content": "x", "action": "rename"},
        "Input should be 'create', 'update' or 'delete'",
    ),
    BadCase("manage", {"action": "update", "content": "x"}, "must provide a MEMORY ID"),
    BadCase("manage", {"action": "delete"}, "must provide a MEMORY ID"),
    BadCase(
        "manage", {"action": "update", "id": "no-such-id", "content": "x"}, "no memory with id"
    ),
    BadCase("manage", {"action": "delete", "id": "no-such-id"}, "no memory with id"),
    BadCase(
        "manage",
        {"action": "create", "content": "x", "id": "{known}"},
        "cannot provide a MEMORY ID",
    ),
    BadCase("manage", {"action": "update", "id": "{known}"}, "needs the memory text"),
    BadCase(
        "manage", {"action": "update", "id": "{known}", "content": "  "}, "needs the memory text"
    ),
    BadCase("manage", {"action": "update", "id": "{old}", "content": "x"}, "superseded by"),
    BadCase("manage", {"content": None}, "needs the memory text"),
    BadCase(
        "search", {"query": "x", "filter": {"priority": {"$regex": "a"}}}, "unknown filter operator"
    ),
    BadCase(
        "search",
        {"query": "x", "filter": {"$or": [{"a": 1}]}},
        "unknown filter operator '$or' at the top level",
    ),
    BadCase("search", {"query": "x", "as_of": "last tuesday"}, "ISO 8601"),
    BadCase("search", {"query": "x", "limit": 0}, "limit must be at least 1"),
    BadCase("search", {"query": "x", "offset": -1}, "offset must be 0 or more"),
    BadCase("search", {"limit": 3}, "query"),
]


@pytest.mark.parametrize("case", BAD_INPUT, ids=lambda c: f"{c.tool}-{c.expect[:24]}")
async def test_bad_input_is_reported_to_the_model_and_changes_nothing(
    new_store: AsyncStoreFactory, use_async: bool, case: BadCase
) -> None:
    store = await new_store()
    manage = create_manage_memory_tool(TEMPLATE, store=store)
    search = create_search_memory_tool(TEMPLATE, store=store)
    old = ok(await call(manage, {"content": "Lives in Paris"}, use_async)).split()[-1]
    known = ok(
        await call(manage, {"action": "update", "id": old, "content": "Lives in Rome"}, use_async)
    ).split()[2]
    args = {
        k: (v.format(known=known, old=old) if isinstance(v, str) else v)
        for k, v in case.args.items()
    }
    before = await snapshot(store)
    message = failed(await call(manage if case.tool == "manage" else search, args, use_async))
    assert case.expect in message
    assert await snapshot(store) == before


async def test_namespace_template_errors(new_store: AsyncStoreFactory, use_async: bool) -> None:
    store = await new_store()
    manage = create_manage_memory_tool(("org", "{org_id}", "{user_id}"), store=store)
    with pytest.raises(NamespaceTemplateError, match="'org_id'"):
        await call(manage, {"content": "x"}, use_async, {"configurable": {"user_id": "u1"}})
    with pytest.raises(NamespaceTemplateError, match="invalid"):
        await call(
            manage, {"content": "x"}, use_async, {"configurable": {"user_id": "a.b", "org_id": "o"}}
        )
    with pytest.raises(NamespaceTemplateError, match="string or an integer"):
        await call(
            manage, {"content": "x"}, use_async, {"configurable": {"user_id": ["u"], "org_id": "o"}}
        )
    assert await snapshot(store) == []
    # Integers are fine, and a label can hold several fields.
    tool = create_manage_memory_tool(("org-{org_id}", "{user_id}"), store=store)
    fact_id = ok(
        await call(
            tool, {"content": "x"}, use_async, {"configurable": {"user_id": 7, "org_id": "o"}}
        )
    ).split()[-1]
    tier = SemanticMemory(store, namespace=("org-o", "7"))
    assert (await tier.aget(fact_id) if use_async else tier.get(fact_id)) is not None
    with pytest.raises(ValueError, match="plain name"):
        create_manage_memory_tool(("memories", "{user.id}"))
    with pytest.raises(ValueError, match="actions_permitted"):
        create_manage_memory_tool(TEMPLATE, actions_permitted=("create", "upsert"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tiers"):
        create_memory_tools(TEMPLATE, tiers=("semantic", "working"))  # type: ignore[arg-type]


async def test_actions_permitted_limits_the_schema(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store()
    manage = create_manage_memory_tool(TEMPLATE, store=store, actions_permitted=("create",))
    schema = manage.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    action = schema["properties"]["action"]
    assert action.get("enum", [action.get("const")]) == ["create"]
    assert failed(await call(manage, {"action": "delete", "id": "x"}, use_async)).startswith(
        "Invalid arguments for manage_memory"
    )
    assert await snapshot(store) == []


def test_tool_names_and_arguments_match_langmem() -> None:
    ours = [create_manage_memory_tool(TEMPLATE), create_search_memory_tool(TEMPLATE)]
    theirs = [
        _langmem().create_manage_memory_tool(TEMPLATE),
        _langmem().create_search_memory_tool(TEMPLATE),
    ]
    for mine, reference in zip(ours, theirs):
        assert mine.name == reference.name
        my_args = mine.tool_call_schema.model_json_schema()["properties"]  # type: ignore[union-attr]
        their_args = reference.tool_call_schema.model_json_schema()["properties"]
        assert set(their_args) <= set(my_args)
        assert "runtime" not in my_args
    assert set(ours[1].tool_call_schema.model_json_schema()["properties"]) == {  # type: ignore[union-attr]
        "query",
        "limit",
        "offset",
        "filter",
        "as_of",
    }
    names = [t.name for t in create_memory_tools(TEMPLATE)]
    assert names == [
        "manage_memory",
        "search_memory",
        "record_episode",
        "search_episodes",
        "read_instructions",
        "update_instructions",
    ]
    assert all(t.description for t in create_memory_tools(TEMPLATE))


# ----------------------------------------------------------------------------- langmem interop


async def test_langmem_tools_run_unmodified_on_our_stores(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store(index=hash_index())
    manage = _langmem().create_manage_memory_tool(("memories", "{langgraph_user_id}"), store=store)
    search = _langmem().create_search_memory_tool(("memories", "{langgraph_user_id}"), store=store)
    config: RunnableConfig = {"configurable": {"langgraph_user_id": "u1"}}

    async def run(tool: BaseTool, args: dict[str, Any]) -> Any:
        return await tool.ainvoke(args, config) if use_async else tool.invoke(args, config)

    created = await run(manage, {"content": "Prefers dark mode"})
    key = created.split()[-1]
    await run(manage, {"action": "update", "id": key, "content": "Prefers light mode"})
    [item] = json.loads(await run(search, {"query": "mode"}))
    assert (item["key"], item["value"]) == (key, {"content": "Prefers light mode"})
    await run(manage, {"action": "delete", "id": key})
    assert json.loads(await run(search, {"query": "mode"})) == []


async def test_langmem_items_are_readable_and_correctable_by_our_tools(
    new_store: AsyncStoreFactory, use_async: bool
) -> None:
    store = await new_store()
    theirs = _langmem().create_manage_memory_tool(TEMPLATE, store=store)
    their_profiles = _langmem().create_manage_memory_tool(TEMPLATE, store=store, schema=dict)
    their_search = _langmem().create_search_memory_tool(TEMPLATE, store=store)
    manage = create_manage_memory_tool(TEMPLATE, store=store)
    search = create_search_memory_tool(TEMPLATE, store=store)

    async def run(tool: BaseTool, args: dict[str, Any]) -> Any:
        return await tool.ainvoke(args, CONFIG) if use_async else tool.invoke(args, CONFIG)

    legacy = (await run(theirs, {"content": "Speaks French"})).split()[-1]
    await run(their_profiles, {"content": {"pet": "cat", "name": "Tom"}})
    hits = rows(await call(search, {"query": "French"}, use_async))
    assert (hits[0]["id"], hits[0]["text"], hits[0]["valid_to"]) == (legacy, "Speaks French", None)
    structured = rows(await call(search, {"query": "cat Tom"}, use_async))
    assert json.loads(structured[0]["text"]) == {"pet": "cat", "name": "Tom"}

    # Correcting a langmem item migrates it: the old text stays as history.
    before = tick()
    updated = ok(
        await call(
            manage,
            {"action": "update", "id": legacy, "content": "Speaks French and German"},
            use_async,
        )
    )
    new_id = updated.split()[2]
    now = rows(await call(search, {"query": "speaks", "limit": 5}, use_async))
    assert [h["text"] for h in now if "Speaks" in h["text"]] == ["Speaks French and German"]
    then = rows(await call(search, {"query": "speaks", "as_of": before.isoformat()}, use_async))
    assert [h["text"] for h in then if "Speaks" in h["text"]] == ["Speaks French"]
    tier = SemanticMemory(store, namespace=ROOT)
    lineage = await tier.ahistory(new_id) if use_async else tier.history(new_id)
    assert [f.text for f in lineage] == ["Speaks French", "Speaks French and German"]
    assert lineage[0].metadata == {"langmem_id": legacy}
    got = await store.aget(ROOT, legacy) if use_async else store.get(ROOT, legacy)
    assert got is None

    # Deleting a langmem item ends it the same way.
    pet = structured[0]["id"]
    ok(await call(manage, {"action": "delete", "id": pet}, use_async))
    assert [
        h for h in rows(await call(search, {"query": "cat"}, use_async)) if "cat" in h["text"]
    ] == []

    # The reverse: langmem's search tool finds what our tools wrote.
    ok(await call(manage, {"content": "Works from Lisbon"}, use_async))
    found = json.loads(await run(their_search, {"query": "Lisbon"}))
    assert "Works from Lisbon" in [item["value"].get("text") for item in found]


# ----------------------------------------------------------------------------- episodic / procedural


async def test_episode_and_instruction_tools(new_store: AsyncStoreFactory, use_async: bool) -> None:
    store = await new_store()
    tools = {t.name: t for t in create_memory_tools(TEMPLATE, store=store)}
    config: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "th-1"}}

    recorded = ok(
        await call(
            tools["record_episode"],
            {"text": "Booked a flight to Oslo", "outcome": "user happy", "success": True},
            use_async,
            config,
        )
    )
    episode_id = recorded.split()[-1]
    ok(
        await call(
            tools["record_episode"],
            {"text": "Hotel booking failed", "success": False},
            use_async,
            config,
        )
    )
    [hit] = json.loads(
        ok(await call(tools["search_episodes"], {"query": "flight", "success": True}, use_async))
    )
    assert (hit["id"], hit["outcome"], hit["success"]) == (episode_id, "user happy", True)
    log = EpisodicMemory(store, namespace=ROOT)
    episode = await log.aget(episode_id) if use_async else log.get(episode_id)
    assert episode is not None and episode.thread_id == "th-1"
    assert failed(await call(tools["search_episodes"], {"since": "soon"}, use_async)).startswith(
        "since"
    )

    read = tools["read_instructions"]
    update = tools["update_instructions"]
    assert json.loads(ok(await call(read, {"name": "tone"}, use_async))) == {
        "name": "tone",
        "version": 0,
        "text": None,
    }
    ok(await call(update, {"name": "tone", "text": "Be brief.", "expected_version": 0}, use_async))
    v1 = tick()
    published = ok(
        await call(
            update, {"name": "tone", "text": "Be brief and warm.", "expected_version": 1}, use_async
        )
    )
    assert published == "published instructions 'tone' version 2"
    current = json.loads(ok(await call(read, {"name": "tone"}, use_async)))
    assert (current["version"], current["text"]) == (2, "Be brief and warm.")
    past = json.loads(ok(await call(read, {"name": "tone", "as_of": v1.isoformat()}, use_async)))
    assert (past["version"], past["text"]) == (1, "Be brief.")
    before = await snapshot(store)
    stale = failed(
        await call(update, {"name": "tone", "text": "Be loud.", "expected_version": 1}, use_async)
    )
    assert "version 2, not 1" in stale
    assert await snapshot(store) == before
    skills = ProceduralMemory(store, namespace=ROOT)
    history = await skills.ahistory("tone") if use_async else skills.history("tone")
    assert [p.text for p in history] == ["Be brief.", "Be brief and warm."]


def test_template_reads_object_contexts_before_configurable() -> None:
    @dataclass
    class UserContext:
        user_id: str

    template = _Template(TEMPLATE)
    assert template.fill(UserContext("ctx"), {"user_id": "cfg"}) == ("memories", "ctx")
    assert template.fill({"user_id": "ctx"}, {"user_id": "cfg"}) == ("memories", "ctx")
    assert template.fill(None, {"user_id": "cfg"}) == ("memories", "cfg")
    with pytest.raises(
        NamespaceTemplateError, match=r"needs 'user_id'.*configurable has \['org'\]"
    ):
        template.fill(UserContext.__new__(UserContext), {"org": "x", "__pregel_runtime": 1})


def test_tiers_subset(make_store: StoreFactory) -> None:
    store = make_store()
    tools = create_memory_tools(TEMPLATE, tiers=("procedural",), store=store)
    assert [t.name for t in tools] == ["read_instructions", "update_instructions"]


async def test_concurrent_async_updates_of_one_memory(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore()
    manage = create_manage_memory_tool(TEMPLATE, store=store)
    fact = ok(await call(manage, {"content": "Has one cat"}, True)).split()[-1]
    results: list[ToolMessage] = await asyncio.gather(
        *(
            call(manage, {"action": "update", "id": fact, "content": f"Has {n} cats"}, True)
            for n in (2, 3)
        )
    )
    statuses = sorted(r.status for r in results)
    assert statuses == ["error", "success"]
    tier = SemanticMemory(store, namespace=ROOT)
    assert len(await tier.ahistory(fact)) == 2
