"""The offline demo: an agent with this package's memory tools, talking to a scripted model.

:class:`~langmem_adapters.demo.scripted.ScriptedChatModel` plays a fixed script (no API key,
deterministic), :data:`SCRIPT` is the
story told in :data:`TURNS` (Ada introduces herself, asks for a drink, moves, asks where she lived),
:func:`build_agent` wires any chat model and tools into a LangGraph graph, and :func:`run_demo` plays
every turn in a new thread on a store and prints the transcript and what the store remembers.
``langmem-adapters demo`` runs it; the notebooks use :class:`ScriptedChatModel` the same way.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, PutOp
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from langmem_adapters.demo.scripted import ScriptedChatModel, ScriptedMemoryModel, Step
from langmem_adapters.manager import BackgroundManager, MemoryManager
from langmem_adapters.memory import SemanticMemory

__all__ = [
    "BACKGROUND_FACTS",
    "BACKGROUND_TURNS",
    "ROOT",
    "SCRIPT",
    "SCRIPTED_LABEL",
    "SYSTEM_PROMPT",
    "TURNS",
    "USER",
    "build_agent",
    "clear",
    "run_background_step",
    "run_demo",
    "show_memory",
    "show_step",
]

ROOT = ("langmem-demo",)
"""The namespace root of the demo's memories (one namespace per user below it)."""
USER = "ada"
"""The demo's user id."""
SCRIPTED_LABEL = "[scripted model — offline demo]"
"""How the transcript names the scripted model, so nobody mistakes it for a real one."""

# --------------------------------------------------------------------------- the script


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}


def _say(text: str) -> Step:
    return lambda results: AIMessage(text)


def _calls(*calls: Callable[[], dict[str, Any]]) -> Step:
    return lambda results: AIMessage("", tool_calls=[make() for make in calls])


def _found(results: list[ToolMessage]) -> list[dict[str, Any]]:
    """The memories that ``search_memory`` returned (its JSON output), across the step's results."""
    found: list[dict[str, Any]] = []
    for r in results:
        with contextlib.suppress(json.JSONDecodeError, TypeError):
            data = json.loads(str(r.content))
            if isinstance(data, list):
                found += [d for d in data if isinstance(d, dict)]
    return found


def _home(results: list[ToolMessage]) -> dict[str, Any] | None:
    return next((m for m in _found(results) if "lives in" in str(m.get("text"))), None)


def _correct_home(results: list[ToolMessage]) -> AIMessage:
    """Update the 'lives in' memory found by the previous search (a correction, history kept)."""
    home = _home(results)
    if home is None:
        return AIMessage(
            "", tool_calls=[_call("manage_memory", content="Ada lives in Berlin", action="create")]
        )
    return AIMessage(
        "",
        tool_calls=[
            _call("manage_memory", content="Ada lives in Berlin", action="update", id=home["id"])
        ],
    )


def _look_back(results: list[ToolMessage]) -> AIMessage:
    """Point-in-time recall: what was believed just before the current address was recorded."""
    home = _home(results)
    if home is None or not home.get("valid_from"):
        return AIMessage("I don't know where you live yet.")
    since = datetime.fromisoformat(str(home["valid_from"]).replace("Z", "+00:00"))
    before = (
        (since - timedelta(milliseconds=1))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )
    return AIMessage(
        "", tool_calls=[_call("search_memory", query="where Ada lives", as_of=before, limit=1)]
    )


def _answer_then_and_now(results: list[ToolMessage]) -> AIMessage:
    then = _home(results)
    before = (
        str(then["text"]).removeprefix("Ada lives in ") if then else "somewhere I was never told"
    )
    return AIMessage(f"Before your move you lived in {before}; now you live in Berlin.")


TURNS: list[tuple[str, str]] = [
    ("1-introductions", "Hi! I'm Ada. I live in Paris, and I prefer green tea over coffee."),
    ("2-next-day", "Can you suggest a drink for my afternoon break? Tea or coffee?"),
    ("3-moving", "Big news: I've just moved to Berlin!"),
    ("4-looking-back", "Where did I live before I moved, and where do I live now?"),
]
"""(thread id, user message): each turn runs in a new thread, so only long-term memory connects them."""

SCRIPT: dict[str, list[Step]] = {
    TURNS[0][1]: [
        _calls(
            lambda: _call("manage_memory", content="Ada lives in Paris", action="create"),
            lambda: _call(
                "manage_memory", content="Ada prefers green tea over coffee", action="create"
            ),
        ),
        _say("Nice to meet you, Ada! I'll remember that you live in Paris and prefer green tea."),
    ],
    TURNS[1][1]: [
        _calls(lambda: _call("search_memory", query="Ada tea or coffee drink preference", limit=3)),
        lambda results: AIMessage(
            "How about a pot of green tea? You told me you prefer it over coffee."
            if any("green tea" in str(m.get("text")) for m in _found(results))
            else "I don't know your taste yet: tea or coffee?"
        ),
    ],
    TURNS[2][1]: [
        _calls(lambda: _call("search_memory", query="where Ada lives", limit=3)),
        _correct_home,
        _say(
            "Congratulations on the move! I've updated your address to Berlin and kept Paris as history."
        ),
    ],
    TURNS[3][1]: [
        _calls(lambda: _call("search_memory", query="where Ada lives", limit=3)),
        _look_back,
        _answer_then_and_now,
    ],
}
"""The scripted model's replies to each user message of :data:`TURNS`."""

SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory that persists across conversations. "
    "Use manage_memory to save lasting facts about the user and to update a memory (by its id) "
    "when it stops being true; use search_memory before answering questions about the user, with "
    "as_of (an ISO time) for questions about what held in the past. Answer briefly."
)
"""What a real model is told about its memory tools (the scripted one ignores it)."""


# --------------------------------------------------------------------------- the agent


def build_agent(
    model: BaseChatModel, tools: Sequence[BaseTool], store: BaseStore
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A tool-calling agent as a LangGraph graph: model → tools → model … until no tool call.

    Threads are kept by an in-memory checkpointer; long-term memory lives in ``store``, which the
    ``ToolNode`` hands to the memory tools.
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM_PROMPT), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def clear(store: BaseStore, prefix: tuple[str, ...]) -> None:
    """Delete every item under ``prefix`` (so the demo starts from a clean slate)."""
    while hits := store.search(prefix, limit=500):
        store.batch([PutOp(h.namespace, h.key, None) for h in hits])


def run_demo(
    store: BaseStore, model: BaseChatModel, out: Console, *, store_label: str, model_label: str
) -> None:
    """Play :data:`TURNS` on ``store`` (cleared first under :data:`ROOT`) with ``model``, each in a
    new thread, printing the transcript and then the facts the store remembers."""
    from langmem_adapters.tools import create_memory_tools

    clear(store, ROOT)
    agent = build_agent(
        model, create_memory_tools((*ROOT, "{user_id}"), tiers=("semantic",)), store
    )
    out.rule("langmem-adapters demo")
    out.print(f"store: {escape(store_label)}\nmodel: {escape(model_label)}", highlight=False)
    for thread, text in TURNS:
        out.print(f"\n[bold]thread {escape(thread)}[/] [dim](new conversation)[/]", highlight=False)
        out.print(f"  [magenta]user[/]   {escape(text)}", highlight=False)
        config: RunnableConfig = {"configurable": {"thread_id": thread, "user_id": USER}}
        state = agent.invoke({"messages": [HumanMessage(text)]}, config)
        calls: dict[str, dict[str, Any]] = {}
        for message in state["messages"][1:]:
            show_step(out, message, calls)
    out.print()
    show_memory(out, SemanticMemory(store, namespace=(*ROOT, USER)))
    run_background_step(store, model, out)


# --------------------------------------------------------------------------- background extraction

BACKGROUND_TURNS: list[str] = [
    "By the way, I've started learning the cello.",
    "Oh, and I'm vegetarian now.",
    "Thanks, that's all for today!",
]
"""A last thread with no memory tool calls: the memory manager extracts from it afterwards."""

BACKGROUND_FACTS: dict[str, str] = {
    "cello": "Ada is learning the cello",
    "vegetarian": "Ada is vegetarian",
}
"""What the scripted memory model extracts from :data:`BACKGROUND_TURNS` (by keyword)."""


def _extract(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted memory model: one fact per known keyword in the new user turns."""
    new = " ".join(t["content"] for t in data.get("conversation", []) if t.get("new"))
    return [{"action": "create", "text": f} for k, f in BACKGROUND_FACTS.items() if k in new]


def run_background_step(store: BaseStore, model: BaseChatModel, out: Console) -> None:
    """A thread whose memories are extracted in the background by the memory manager: each
    message restarts the debounce, and one extraction of the final state runs once the thread is
    quiet (flushed here at shutdown). A scripted demo model gets a scripted memory model."""
    extractor = (
        ScriptedMemoryModel(script=_extract) if isinstance(model, ScriptedChatModel) else model
    )
    manager = MemoryManager(extractor, namespace=(*ROOT, "{user_id}"), store=store)
    config: RunnableConfig = {"configurable": {"thread_id": "5-background", "user_id": USER}}
    out.print("\n[bold]thread 5-background[/] [dim](no memory tools: extraction afterwards)[/]")
    messages: list[BaseMessage] = []
    with BackgroundManager(manager, delay=0.5) as executor:
        for text in BACKGROUND_TURNS:
            messages += [HumanMessage(text), AIMessage("Noted!")]
            out.print(f"  [magenta]user[/]   {escape(text)}", highlight=False)
            executor.submit(list(messages), config)
        out.print(
            f"  [dim]memory manager: {executor.pending} thread queued (each message restarted "
            "its 0.5 s wait); shutting down flushes it[/]"
        )
    calls = sum(r.model_calls for r in executor.results)
    out.print(
        f"  [cyan]memory manager[/] ran {len(executor.results)} extraction "
        f"({calls} model call) on the final state of the thread",
        highlight=False,
    )
    for result in executor.results:
        for outcome in result.outcomes:
            what = getattr(outcome.record, "text", None) or outcome.detail
            out.print(
                f"         [green]extracted ({escape(outcome.status)}):[/] {escape(str(what))}",
                highlight=False,
            )
    for _, error in executor.errors:
        out.print(f"         [red]extraction failed: {escape(str(error))}[/]", highlight=False)


# --------------------------------------------------------------------------- rendering


def _when(iso: Any) -> str:
    """A tool's ISO time as ``YYYY-MM-DD HH:MM:SS`` (the demo happens within seconds)."""
    return str(iso).replace("T", " ")[:19] if iso else "now"


def show_step(out: Console, message: BaseMessage, calls: dict[str, dict[str, Any]]) -> None:
    """One transcript line per tool call, tool result and reply; ``calls`` maps call ids to arguments
    (filled from the model's messages, read for the tool results that answer them)."""
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            calls[call["id"] or ""] = call["args"]
            shown = ", ".join(f"{k}={v!r}" for k, v in call["args"].items())
            out.print(
                f"  [cyan]agent[/]  → {escape(call['name'])}({escape(shown)})", highlight=False
            )
        if message.content:
            out.print(f"  [cyan]agent[/]  {escape(str(message.content))}", highlight=False)
        return
    if not isinstance(message, ToolMessage):
        return
    args = calls.get(message.tool_call_id, {})
    content = str(message.content)
    if message.status == "error":
        out.print(f"         [red]tool error: {escape(content)}[/]", highlight=False)
    elif message.name == "manage_memory":
        verb = {"create": "stored", "update": "corrected", "delete": "forgot"}.get(
            str(args.get("action")), "changed"
        )
        out.print(
            f"         [green]{verb}:[/] {escape(str(args.get('content', '')))} [dim]({escape(content)})[/]",
            highlight=False,
        )
    elif message.name == "search_memory":
        verb = f"recalled as of {_when(args['as_of'])}" if args.get("as_of") else "recalled"
        found = _found([message])
        if not found:
            out.print(f"         [yellow]{verb}: nothing[/]", highlight=False)
        for m in found:
            window = f"valid {_when(m.get('valid_from'))} → {_when(m.get('valid_to'))}"
            out.print(
                f"         [green]{verb}:[/] {escape(str(m.get('text')))} [dim]({window})[/]",
                highlight=False,
            )
    else:
        out.print(
            f"         [green]{escape(message.name or 'tool')}:[/] {escape(content)}",
            highlight=False,
        )


def show_memory(out: Console, memory: SemanticMemory) -> None:
    """The facts now in the store with their validity windows (the correction kept history)."""
    table = Table(title=f"What the store remembers about {USER}", title_justify="left")
    for column in ("memory", "valid from (UTC)", "valid to (UTC)", "status"):
        table.add_column(column)
    items = memory.store.search((*memory.root, "semantic"), filter={"kind": "fact"}, limit=100)
    facts = [f for h in items if (f := memory.get(h.value["id"])) is not None]
    for f in sorted(facts, key=lambda f: (f.lineage_id, f.valid_from)):
        status = "current" if f.valid_to is None else "superseded" if f.superseded_by else "ended"
        to = f.valid_to.strftime("%Y-%m-%d %H:%M:%S") if f.valid_to else "—"
        table.add_row(escape(f.text), f.valid_from.strftime("%Y-%m-%d %H:%M:%S"), to, status)
    out.print(table)
