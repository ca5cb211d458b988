"""langmem-compatible entry point: :func:`create_memory_store_manager` with langmem's signature,
writing langmem's store-manager items (``{"kind": "Memory", "content": {"content": text}}``
directly under the namespace), so langmem's own manager and search read what it writes.

:class:`ReflectionExecutor` is langmem's executor of the same name on
:class:`~langmem_adapters.manager.BackgroundManager`: ``submit(payload, config, after_seconds=...)``
debounces per thread the same way, but processes the latest payload when the wait ends, keeps
results instead of returning futures, and is flushed and shut down like the background manager.

What differs, by design: facts are plain text (``schemas`` must be left at langmem's default),
one model call per conversation (``query_model``, ``phases`` and ``max_steps`` are not
supported), ids the model was not shown are rejected, and pure duplicates skip the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.store.base import BaseStore

from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.manager.actions import ActionKind
from langmem_adapters.manager.background import BackgroundManager
from langmem_adapters.manager.manager import MemoryManager

__all__ = ["MemoryStoreManager", "ReflectionExecutor", "create_memory_store_manager"]


class MemoryStoreManager(Runnable[Any, list[dict[str, Any]]]):
    """A :class:`MemoryManager` in langmem's layout that returns what langmem's returns: the list
    of puts ``{"namespace", "key", "value"}`` it made. ``manager`` is the underlying manager."""

    def __init__(self, manager: MemoryManager) -> None:
        self.manager = manager

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Process ``{"messages": [...]}`` (or a list of messages) on the sync APIs."""
        return self.manager.invoke(input, config, **kwargs).langmem_puts()

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Process ``{"messages": [...]}`` (or a list of messages) on the async APIs."""
        return (await self.manager.ainvoke(input, config, **kwargs)).langmem_puts()

    async def __call__(self, messages: Any) -> list[dict[str, Any]]:
        """``await manager(messages)``, as langmem's manager allows."""
        return await self.ainvoke({"messages": messages})


def create_memory_store_manager(
    model: Any,
    /,
    *,
    schemas: list[Any] | None = None,
    instructions: str = "",
    default: str | None = None,
    default_factory: Callable[[RunnableConfig], str] | None = None,
    enable_inserts: bool = True,
    enable_deletes: bool = False,
    query_model: Any = None,
    query_limit: int = 5,
    namespace: tuple[str, ...] = ("memories", "{langgraph_user_id}"),
    store: BaseStore | None = None,
    phases: list[Any] | None = None,
) -> MemoryStoreManager:
    """langmem's ``create_memory_store_manager``, on this package's manager (module docstring).

    ``enable_inserts`` / ``enable_deletes`` permit creating and deleting memories (updates are
    always permitted); ``query_limit`` is how many related memories the model sees. A string
    ``model`` is resolved with LangChain's ``init_chat_model``.
    """
    unsupported = {
        "schemas": schemas,
        "default": default,
        "default_factory": default_factory,
        "query_model": query_model,
        "phases": phases,
    }
    given = [name for name, value in unsupported.items() if value is not None]
    if given:
        raise InvalidArgumentError(
            f"create_memory_store_manager: {', '.join(given)} not supported (text memories, one "
            "model call per conversation); use langmem's own manager for them"
        )
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    actions: list[ActionKind] = ["supersede", "none"]
    if enable_inserts:
        actions.insert(0, "create")
    if enable_deletes:
        actions.insert(-1, "end")
    return MemoryStoreManager(
        MemoryManager(
            model,
            namespace=namespace,
            store=store,
            instructions=instructions,
            actions=actions,
            procedure=None,
            top_k=query_limit,
            layout="langmem",
        )
    )


class ReflectionExecutor:
    """langmem's ``ReflectionExecutor(reflector, store=...)`` for a manager of this package (a
    :class:`MemoryStoreManager` or a :class:`MemoryManager`), running in worker threads.

    ``submit(payload, config, after_seconds=N, thread_id=...)``: a later submission for the
    same thread within ``N`` seconds replaces this one and restarts the wait. ``executor`` is the
    underlying :class:`~langmem_adapters.manager.BackgroundManager` (``results``, ``errors``).
    """

    def __init__(
        self,
        reflector: MemoryStoreManager | MemoryManager,
        /,
        *,
        store: BaseStore | None = None,
        max_workers: int = 4,
    ) -> None:
        manager = reflector.manager if isinstance(reflector, MemoryStoreManager) else reflector
        self.executor = BackgroundManager(manager, delay=0.0, max_workers=max_workers)
        self.store = store

    def submit(
        self,
        payload: Any,
        /,
        config: RunnableConfig | None = None,
        *,
        after_seconds: float = 0,
        thread_id: str | None = None,
    ) -> None:
        """Process ``payload`` (``{"messages": [...]}``) once its thread is quiet for
        ``after_seconds``."""
        self.executor.submit(
            payload, config, store=self.store, delay=after_seconds, thread_id=thread_id
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending submission now and wait (see ``BackgroundManager.flush``)."""
        return self.executor.flush(timeout)

    def shutdown(self, *, wait: bool = True) -> None:
        """Flush (``wait=True``) or drop what is pending, then stop."""
        self.executor.shutdown(wait=wait)

    def __enter__(self) -> ReflectionExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
