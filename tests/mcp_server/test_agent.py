"""``langchain-mcp-adapters`` loads the MCP server's tools into a LangGraph agent, driven by a
scripted chat model, on Postgres and Redis: the agent saves a memory, finds it in a later turn, and
sees a bad call come back as a tool error."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient

from langmem_adapters.demo import ScriptedChatModel
from tests.mcp_server.helpers import HttpServer, snapshot, store_url

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def _text(message: ToolMessage) -> str:
    """A tool result's text (the adapters give content blocks)."""
    if isinstance(message.content, str):
        return message.content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in message.content)


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}


def _answer(results: list[ToolMessage]) -> AIMessage:
    hits = json.loads(_text(results[0]))
    return AIMessage("You drink: " + "; ".join(h["text"] for h in hits))


def _report(results: list[ToolMessage]) -> AIMessage:
    return AIMessage(f"{results[0].status}: {_text(results[0])}")


SCRIPT = {
    "Remember that I drink green tea.": [
        lambda results: AIMessage(
            "", tool_calls=[_call("save_memory", content="I drink green tea")]
        ),
        lambda results: AIMessage("Noted."),
    ],
    "What do I drink?": [
        lambda results: AIMessage("", tool_calls=[_call("search_memory", query="drink")]),
        _answer,
    ],
    "Forget memory 42.": [
        lambda results: AIMessage("", tool_calls=[_call("forget_memory", id="42")]),
        _report,
    ],
}


@pytest.fixture(params=["postgres", "redis-qe"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, HttpServer]]:
    url = store_url(str(request.param))
    server = HttpServer(url)
    yield url, server
    server.close()


async def test_agent_uses_the_mcp_memory_tools(served: tuple[str, HttpServer]) -> None:
    url, server = served
    client = MultiServerMCPClient(
        {"memory": {"transport": "streamable_http", "url": f"{server.base}/users/ada/mcp"}}
    )
    tools = await client.get_tools()
    assert {"save_memory", "search_memory", "forget_memory"} <= {t.name for t in tools}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's deprecation in langgraph 1.x
        agent = create_react_agent(ScriptedChatModel(script=SCRIPT), tools)

    async def turn(text: str) -> str:
        state = await agent.ainvoke({"messages": [HumanMessage(text)]})
        return str(state["messages"][-1].content)

    assert await turn("Remember that I drink green tea.") == "Noted."
    assert await turn("What do I drink?") == "You drink: I drink green tea"
    reply = await turn("Forget memory 42.")
    assert reply.startswith("error:") and "no memory with id '42'" in reply
    facts = [v for ns, _, v in snapshot(url) if ns == ("memories", "ada", "semantic")]
    assert [v["text"] for v in facts] == ["I drink green tea"]
