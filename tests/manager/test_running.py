"""Where the manager runs: a LangGraph node (hot path or deferred), and the background
executors' debounce (100 threads x 5 rapid messages), flush and shutdown, sync and async."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from langmem_adapters.demo import ScriptedMemoryModel, last_user_text
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.manager import AsyncBackgroundManager, BackgroundManager, MemoryManager
from langmem_adapters.memory import SemanticMemory
from tests.manager.helpers import run
from tests.waiting import await_until


class Ctx(TypedDict):
    user_id: int


def remember_last(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Store the newest user message as a fact."""
    return [{"action": "create", "text": f"said: {last_user_text(data)}"}]


def graph(manager: MemoryManager, store: BaseStore, **node: Any) -> Any:
    builder = StateGraph(MessagesState, context_schema=Ctx)
    builder.add_node("remember", manager.as_node(**node))
    builder.add_edge(START, "remember")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


async def test_node_in_the_hot_path(store: BaseStore, use_async: bool) -> None:
    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("memories", "{user_id}"))  # store from the graph
    app = graph(manager, store)
    config: Any = {"configurable": {"thread_id": "t1"}}
    for text in ("I like tea", "I like chess"):
        state = {"messages": [HumanMessage(text)]}
        if use_async:
            await app.ainvoke(state, config, context={"user_id": 7})
        else:
            app.invoke(state, config, context={"user_id": 7})
    # The checkpointer accumulates the thread: each run processes only its new message.
    assert model.calls == 2
    assert [len(d["conversation"]) for d in model.seen] == [1, 2]
    tier = SemanticMemory(store, namespace=("memories", "7"))
    texts = {f.text for f in await run(tier, "recall", None, use_async=use_async)}
    assert texts == {"said: I like tea", "said: I like chess"}


async def test_deferred_node_processes_after_the_thread_goes_quiet(
    store: BaseStore, use_async: bool
) -> None:
    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("memories", "{user_id}"))
    config: Any = {"configurable": {"thread_id": "t1"}}
    # A long debounce, then a flush: the test does not depend on how fast the machine is.
    if use_async:
        executor: Any = AsyncBackgroundManager(manager, delay=60)
        app = graph(manager, store, executor=executor)
        for text in ("one", "two", "three"):
            await app.ainvoke({"messages": [HumanMessage(text)]}, config, context={"user_id": 7})
        assert model.calls == 0 and executor.pending == 1  # nothing in the hot path
        assert await executor.aflush(timeout=30)
        await executor.ashutdown()
    else:
        executor = BackgroundManager(manager, delay=60)
        app = graph(manager, store, executor=executor)
        for text in ("one", "two", "three"):
            app.invoke({"messages": [HumanMessage(text)]}, config, context={"user_id": 7})
        assert model.calls == 0 and executor.pending == 1
        assert executor.flush(timeout=30)
        executor.shutdown()
    assert model.calls == 1
    # One extraction, of the final state: all three turns, the newest being "three".
    assert [t["content"] for t in model.seen[0]["conversation"]] == ["one", "two", "three"]
    assert not executor.errors


THREADS, MESSAGES, DELAY = 100, 5, 0.5


def conversation(thread: int, upto: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"thread {thread} message {i}"} for i in range(upto + 1)]


def check_one_final_extraction_per_thread(model: ScriptedMemoryModel, results: list[Any]) -> None:
    assert model.calls == THREADS
    newest = Counter(last_user_text(d) for d in model.seen)
    assert newest == Counter(f"thread {t} message {MESSAGES - 1}" for t in range(THREADS))
    assert sorted(r.thread_id for r in results) == sorted(f"t{t}" for t in range(THREADS))


async def test_background_debounce_100_threads(store: BaseStore, use_async: bool) -> None:
    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("memories", "{thread_id}"), store=store)
    if use_async:
        executor: Any = AsyncBackgroundManager(manager, delay=DELAY)
    else:
        executor = BackgroundManager(manager, delay=DELAY)
    for i in range(MESSAGES):  # rapid: all 5 rounds well within one delay
        for t in range(THREADS):
            executor.submit(conversation(t, i), {"configurable": {"thread_id": f"t{t}"}})
        if use_async:
            await asyncio.sleep(0.01)  # the rounds come over time (the scheduler runs between)
    assert model.calls == 0
    await await_until(lambda: len(executor.results) >= THREADS, what="one call per thread")
    # Nothing more comes after the debounce: nothing is pending, and once what runs has ended
    # (flush expedites nothing here, it waits for idle) there was one call per thread.
    assert executor.pending == 0
    assert await executor.aflush(timeout=30) if use_async else executor.flush(timeout=30)
    check_one_final_extraction_per_thread(model, executor.results)
    assert not executor.errors and executor.pending == 0
    if use_async:
        await executor.ashutdown()
    else:
        executor.shutdown()


async def test_shutdown_flushes_so_nothing_is_lost(store: BaseStore, use_async: bool) -> None:
    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("memories", "{thread_id}"), store=store)
    if use_async:
        executor: Any = AsyncBackgroundManager(manager, delay=60)
    else:
        executor = BackgroundManager(manager, delay=60)
    for i in range(MESSAGES):
        for t in range(THREADS):
            executor.submit(conversation(t, i), {"configurable": {"thread_id": f"t{t}"}})
    assert executor.pending == THREADS
    if use_async:
        await executor.ashutdown()
    else:
        executor.shutdown()
    check_one_final_extraction_per_thread(model, executor.results)
    tier = SemanticMemory(store, namespace=("memories", "t3"))
    assert [f.text for f in await run(tier, "recall", None, use_async=use_async)] == [
        "said: thread 3 message 4"
    ]


async def test_cancel_and_drop_without_errors(store: BaseStore, use_async: bool) -> None:
    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("m", "{thread_id}"), store=store)
    executor: Any = (AsyncBackgroundManager if use_async else BackgroundManager)(manager, delay=60)
    executor.submit(conversation(1, 0), {"configurable": {"thread_id": "a"}})
    executor.submit(conversation(2, 0), {"configurable": {"thread_id": "b"}})
    assert executor.cancel("a") and not executor.cancel("a")
    if use_async:
        await executor.ashutdown(wait=False)
    else:
        executor.shutdown(wait=False)
    assert (executor.cancelled, model.calls, executor.errors, executor.failed) == (1, 0, [], 0)
    with pytest.raises(InvalidArgumentError, match="shut down"):
        executor.submit(conversation(3, 0), {"configurable": {"thread_id": "c"}})


async def test_async_executor_survives_cancelled_submitters() -> None:
    from langgraph.store.memory import InMemoryStore

    model = ScriptedMemoryModel(script=remember_last)
    manager = MemoryManager(model, namespace=("m", "{thread_id}"), store=InMemoryStore())
    executor = AsyncBackgroundManager(manager, delay=0.05)

    async def submitter() -> None:
        executor.submit(conversation(1, 0), {"configurable": {"thread_id": "a"}})
        await asyncio.Event().wait()  # the run goes on until it is cancelled

    task = asyncio.create_task(submitter())
    await await_until(lambda: executor.pending == 1, what="the submission")
    task.cancel()  # the run that submitted is cancelled: the deferred call still happens
    assert await executor.aflush(timeout=5)
    await executor.ashutdown()
    assert model.calls == 1 and not executor.errors


async def test_failed_calls_are_kept_and_do_not_stop_the_executor(
    store: BaseStore, use_async: bool
) -> None:
    def flaky(data: dict[str, Any]) -> list[dict[str, Any]]:
        if "boom" in last_user_text(data):
            raise RuntimeError("model down")
        return remember_last(data)

    model = ScriptedMemoryModel(script=flaky)
    manager = MemoryManager(model, namespace=("m", "{thread_id}"), store=store)
    executor: Any = (AsyncBackgroundManager if use_async else BackgroundManager)(
        manager, delay=0.01
    )
    executor.submit([{"role": "user", "content": "boom"}], {"configurable": {"thread_id": "a"}})
    executor.submit([{"role": "user", "content": "fine"}], {"configurable": {"thread_id": "b"}})
    if use_async:
        assert await executor.aflush(timeout=5)
        await executor.ashutdown()
    else:
        assert executor.flush(timeout=5)
        executor.shutdown()
    assert [str(e) for _, e in executor.errors] == ["model down"]
    assert [r.thread_id for r in executor.results] == ["b"]


async def test_history_is_bounded_by_keep_with_counts_of_the_rest(
    store: BaseStore, use_async: bool
) -> None:
    """Only the latest ``keep`` results and errors stay; ``succeeded``/``failed`` count them all."""

    def every_third_fails(data: dict[str, Any]) -> list[dict[str, Any]]:
        if int(last_user_text(data).split()[1]) % 3 == 0:
            raise RuntimeError(last_user_text(data))
        return remember_last(data)

    manager = MemoryManager(
        ScriptedMemoryModel(script=every_third_fails), namespace=("m", "{thread_id}"), store=store
    )
    kind: Any = AsyncBackgroundManager if use_async else BackgroundManager
    with pytest.raises(InvalidArgumentError, match="keep"):
        kind(manager, keep=-1)
    executor = kind(manager, delay=0, max_workers=1, keep=4)
    for n in range(30):  # one thread each, submitted one after another: completion order is n
        executor.submit(conversation(n, 0), {"configurable": {"thread_id": f"t{n}"}})
        if use_async:
            assert await executor.aflush(timeout=5)
        else:
            assert executor.flush(timeout=5)
    if use_async:
        await executor.ashutdown()
    else:
        executor.shutdown()
    assert (executor.succeeded, executor.failed) == (20, 10)
    assert [r.thread_id for r in executor.results] == ["t25", "t26", "t28", "t29"]
    assert [str(e) for _, e in executor.errors] == [
        f"thread {n} message 0" for n in (18, 21, 24, 27)
    ]


EXIT_SCRIPT = """
import atexit
from langgraph.store.memory import InMemoryStore
from langmem_adapters.demo import ScriptedMemoryModel, last_user_text
from langmem_adapters.manager import BackgroundManager, MemoryManager

model = ScriptedMemoryModel(script=lambda d: [{"action": "create", "text": last_user_text(d)}])
# runs after the executor's exit flush (registered first, so run last)
atexit.register(lambda: print("extracted", model.calls, "succeeded", executor.succeeded))
manager = MemoryManager(model, namespace=("m", "{thread_id}"), store=InMemoryStore())
executor = BackgroundManager(manager, delay=60)
for t in range(5):
    executor.submit([{"role": "user", "content": f"hi {t}"}], {"configurable": {"thread_id": str(t)}})
print("pending", executor.pending)
"""


def test_an_exiting_interpreter_flushes_an_open_executor(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["pending", "5", "extracted", "5", "succeeded", "5"], done.stderr


def test_run_without_pool_runs_blocking_calls_in_the_calling_thread() -> None:
    """What the exit flush relies on: a sync model's async path (LangChain sends its blocking call
    to the loop's default executor) runs with no pool thread, and errors come back as raised."""
    import threading

    from langgraph.store.memory import InMemoryStore

    from langmem_adapters.manager.without_pool import run_without_pool

    async def where() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, threading.get_ident)

    assert run_without_pool(where()) == threading.get_ident()
    model = ScriptedMemoryModel(script=lambda d: [{"action": "create", "text": last_user_text(d)}])
    store = InMemoryStore()
    manager = MemoryManager(model, namespace=("m",), store=store)
    result = run_without_pool(manager.ainvoke([{"role": "user", "content": "I like tea"}]))
    assert [o.status for o in result.outcomes] == ["applied"]

    async def fails() -> None:
        await asyncio.get_running_loop().run_in_executor(None, int, "not a number")

    with pytest.raises(ValueError, match="not a number"):
        run_without_pool(fails())
