"""Shared helpers of the manager tests: a store in the mode under test, and sync/async calls."""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

from langmem_adapters.manager import ManagerResult, MemoryManager


async def run(target: Any, method: str, *args: Any, use_async: bool, **kwargs: Any) -> Any:
    """``target.method(...)``, or ``await target.amethod(...)`` in async mode."""
    if use_async:
        return await getattr(target, "a" + method)(*args, **kwargs)
    return getattr(target, method)(*args, **kwargs)


async def process(
    manager: MemoryManager, messages: Any, config: Any, use_async: bool, **kwargs: Any
) -> ManagerResult:
    """One manager call in the mode under test."""
    if use_async:
        return await manager.ainvoke(messages, config, **kwargs)
    return manager.invoke(messages, config, **kwargs)


async def everything(store: BaseStore, use_async: bool) -> list[tuple[tuple[str, ...], str, str]]:
    """Every item of the store, comparable across calls."""
    import json

    items = await run(store, "search", (), use_async=use_async, limit=100_000)
    return sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in items)
