"""A compiled LangGraph graph uses our store through the runtime, across threads."""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from tests.stores import AsyncStoreFactory, StoreFactory, hash_index


class State(TypedDict, total=False):
    message: str
    recalled: list[str]


@dataclass
class Context:
    user_id: str


def remember(state: State, runtime: Runtime[Context]) -> State:
    """Store what the user said as a memory, if it is a preference."""
    assert runtime.store is not None
    if state["message"].startswith("I like"):
        key = str(len(runtime.store.search(("memories", runtime.context.user_id), limit=100)))
        runtime.store.put(("memories", runtime.context.user_id), key, {"text": state["message"]})
    return {}


def recall(state: State, runtime: Runtime[Context]) -> State:
    """Look up memories relevant to the message."""
    assert runtime.store is not None
    hits = runtime.store.search(
        ("memories", runtime.context.user_id), query=state["message"], limit=3
    )
    return {"recalled": [h.value["text"] for h in hits]}


async def aremember(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    if state["message"].startswith("I like"):
        await runtime.store.aput(
            ("memories", runtime.context.user_id), "pref", {"text": state["message"]}
        )
    return {}


async def arecall(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    hits = await runtime.store.asearch(
        ("memories", runtime.context.user_id), query=state["message"], limit=3
    )
    return {"recalled": [h.value["text"] for h in hits]}


def _graph(first, second):  # type: ignore[no-untyped-def]
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("remember", first)
    builder.add_node("recall", second)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder


def test_graph_memory_across_threads(make_store: StoreFactory) -> None:
    store = make_store(index=hash_index(fields=["text"]))
    graph = _graph(remember, recall).compile(checkpointer=InMemorySaver(), store=store)
    alice = Context(user_id="alice")
    graph.invoke(
        {"message": "I like green tea"}, {"configurable": {"thread_id": "t1"}}, context=alice
    )
    out = graph.invoke(
        {"message": "what tea do I like?"}, {"configurable": {"thread_id": "t2"}}, context=alice
    )
    assert out["recalled"] == ["I like green tea"]
    other = graph.invoke(
        {"message": "what tea?"}, {"configurable": {"thread_id": "t3"}}, context=Context("bob")
    )
    assert other["recalled"] == []


async def test_graph_memory_across_threads_async(make_astore: AsyncStoreFactory) -> None:
    store = await make_astore(index=hash_index(fields=["text"]))
    graph = _graph(aremember, arecall).compile(checkpointer=InMemorySaver(), store=store)
    alice = Context(user_id="alice")
    await graph.ainvoke(
        {"message": "I like jasmine tea"}, {"configurable": {"thread_id": "t1"}}, context=alice
    )
    out = await graph.ainvoke(
        {"message": "tea?"}, {"configurable": {"thread_id": "t2"}}, context=alice
    )
    assert out["recalled"] == ["I like jasmine tea"]
