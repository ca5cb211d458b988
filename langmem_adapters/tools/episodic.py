"""The episodic memory tools: ``record_episode`` appends to the episode log, ``search_episodes``
ranks past episodes by relevance and recency."""

from __future__ import annotations

from typing import Any

from langmem_adapters.memory import Episode, EpisodicMemory
from langmem_adapters.memory.flows import Flow, call
from langmem_adapters.tools.builder import Arg, ToolSpec
from langmem_adapters.tools.env import ToolEnv
from langmem_adapters.tools.values import check_page, iso, parse_time, to_json

__all__ = ["EPISODIC_TOOLS"]


def _episode_dict(episode: Episode) -> dict[str, Any]:
    """An episode in the compact JSON form shown to the model."""
    return {
        "id": episode.id,
        "text": episode.text,
        "occurred_at": iso(episode.occurred_at),
        "outcome": episode.outcome,
        "success": episode.success,
        "score": None if episode.score is None else round(episode.score, 4),
    }


def _record_flow(env: ToolEnv, text: str, outcome: str | None, success: bool | None) -> Flow[str]:
    """Append one episode, attributed to the tool call and its thread."""
    log = EpisodicMemory(env.store, namespace=env.root)
    episode: Episode = yield from call(
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
    env: ToolEnv,
    query: str | None,
    limit: int,
    since: str | None,
    until: str | None,
    success: bool | None,
) -> Flow[str]:
    """Up to ``limit`` episodes in the window, ranked by relevance and recency (newest first
    without a query)."""
    check_page(limit, 0)
    log = EpisodicMemory(env.store, namespace=env.root)
    text_query = query if isinstance(query, str) and query.strip() else None
    episodes: list[Episode] = yield from call(
        log,
        "recall",
        text_query,
        since=parse_time(since, "since"),
        until=parse_time(until, "until"),
        k=limit,
        success=success,
    )
    return to_json([_episode_dict(e) for e in episodes])


_RECORD_ARGS = [
    Arg("text", str, "What happened, in one or two sentences."),
    Arg("outcome", str | None, "How it turned out, e.g. 'user satisfied'.", None),
    Arg("success", bool | None, "Whether it went well, if known.", None),
]

_SEARCH_ARGS = [
    Arg("query", str | None, "What to look for; omit for the most recent episodes.", None),
    Arg("limit", int, "Maximum number of episodes.", 5),
    Arg("since", str | None, "Only episodes at or after this ISO 8601 date/time.", None),
    Arg("until", str | None, "Only episodes before this ISO 8601 date/time.", None),
    Arg("success", bool | None, "Only successful (true) or failed (false) episodes.", None),
]


#: The episodic tools: ``record_episode`` and ``search_episodes``.
EPISODIC_TOOLS = (
    ToolSpec(
        "record_episode",
        (
            "Record something that happened in this conversation (a task done, a problem hit, "
            "a decision made) and how it went, so future conversations can learn from it. "
            "Episodes are a log: they are never edited."
        ),
        _RECORD_ARGS,
        _record_flow,
    ),
    ToolSpec(
        "search_episodes",
        (
            "Search past episodes (what happened before and how it went), ranked by relevance "
            "and recency. Returns JSON [{id, text, occurred_at, outcome, success, score}]."
        ),
        _SEARCH_ARGS,
        _episodes_flow,
    ),
)
