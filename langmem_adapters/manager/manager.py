"""MemoryManager: turns conversations into facts, episodes and instruction updates.

One call (``invoke`` / ``ainvoke``, or the graph node of :meth:`MemoryManager.as_node`):

1. resolves the store and the namespace (its ``{field}`` template filled from the run's
   ``context``, then ``config["configurable"]``; integer values allowed);
2. takes the turns not processed yet on this thread (``configurable["thread_id"]``; all turns
   without one) and their user messages, the *candidates*. No candidate: done, no model call;
3. retrieves the ``top_k`` current facts most related to the candidates. When every candidate
   duplicates one of them (:class:`~langmem_adapters.manager.dedupe.Dedupe`): done, no model call;
4. otherwise makes **one** model call with the facts that fit in ``memory_tokens``, the newest
   turns that fit in ``conversation_tokens`` and the current instructions, and validates then
   applies the actions it returns (:mod:`langmem_adapters.manager.apply`);
5. with ``max_facts``, compacts the namespace (:mod:`langmem_adapters.manager.compaction`).

Sync and async calls run the same flow (:mod:`langmem_adapters.memory.flows`): the model and the
store are called with ``invoke`` / ``search``... or ``ainvoke`` / ``asearch``...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, ensure_config
from langgraph.store.base import BaseStore

from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MemoryToolConfigError,
)
from langmem_adapters.manager.actions import (
    ACTION_KINDS,
    ActionKind,
    ManagerResult,
    MemoryActions,
    parse_actions,
)
from langmem_adapters.manager.apply import Plan, apply, validate
from langmem_adapters.manager.background import BackgroundManager
from langmem_adapters.manager.compaction import compact
from langmem_adapters.manager.dedupe import Dedupe
from langmem_adapters.manager.layouts import FactLayout, LangmemFacts, TierFacts
from langmem_adapters.manager.messages import Cursors, messages_of, to_turns
from langmem_adapters.manager.prompt import DEFAULT_INSTRUCTIONS, build_prompt, within_budget
from langmem_adapters.manager.without_pool import WITHOUT_POOL, run_without_pool
from langmem_adapters.memory import Attribution, EpisodicMemory, ProceduralMemory, Procedure
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = ["LAYOUT_ACTIONS", "Layout", "MemoryManager", "resolve_context"]

Layout = Literal["tiers", "langmem"]

#: The action kinds each layout supports (langmem's items are facts only).
LAYOUT_ACTIONS: dict[str, tuple[ActionKind, ...]] = {
    "tiers": ACTION_KINDS,
    "langmem": ("create", "supersede", "end", "none"),
}


def resolve_context(context: Any) -> tuple[Any, BaseStore | None]:
    """The run's context and store: ``context`` if given, else the running graph's (if any)."""
    try:
        from langgraph.runtime import get_runtime

        runtime: Any = get_runtime()
    except (RuntimeError, KeyError):
        runtime = None
    graph_context = getattr(runtime, "context", None)
    return (graph_context if context is None else context), getattr(runtime, "store", None)


def _check_positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 1:
        raise InvalidArgumentError(f"{what} must be at least 1, got {value}")
    return value


class MemoryManager(Runnable[Any, ManagerResult]):
    """Extracts memories from conversations into the tiers under a namespace; see the module
    docstring. Input: a list of messages (LangChain messages or ``{"role", "content"}`` dicts) or
    ``{"messages": [...]}``; output: a :class:`~langmem_adapters.manager.actions.ManagerResult`.

    ``model`` is a chat model with ``with_structured_output``. ``actions`` limits what it may do
    (default: every kind of the layout, :data:`LAYOUT_ACTIONS`);
    ``procedure`` names the instructions (a ``ProceduralMemory`` entry) it may update (``None``:
    never). ``layout="langmem"`` keeps facts as langmem's store manager does (see
    :mod:`~langmem_adapters.manager.layouts`).
    """

    def __init__(
        self,
        model: Any,
        *,
        namespace: Sequence[str] | str = ("memories", "{user_id}"),
        store: BaseStore | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        actions: Sequence[ActionKind] | None = None,
        procedure: str | None = "instructions",
        top_k: int = 10,
        memory_tokens: int = 1500,
        conversation_tokens: int = 4000,
        duplicate_threshold: float | None = 0.9,
        duplicate_score: float | None = None,
        max_facts: int | None = None,
        merge_threshold: float = 0.8,
        layout: Layout = "tiers",
    ) -> None:
        if not hasattr(model, "with_structured_output"):
            raise InvalidArgumentTypeError(
                f"model must be a chat model with with_structured_output, got {type(model).__name__}"
            )
        if layout not in LAYOUT_ACTIONS:
            raise InvalidArgumentError(f"layout must be 'tiers' or 'langmem', got {layout!r}")
        permitted = LAYOUT_ACTIONS[layout]
        actions = permitted if actions is None else tuple(actions)
        if not actions or any(a not in permitted for a in actions):
            raise InvalidArgumentError(
                f"actions must be a non-empty subset of {permitted} (layout {layout!r}), "
                f"got {actions!r}"
            )
        if store is not None and not isinstance(store, BaseStore):
            raise InvalidArgumentTypeError(f"store must be a BaseStore, got {type(store).__name__}")
        self.model = model
        self.structured = model.with_structured_output(MemoryActions, include_raw=True)
        self.template = NamespaceTemplate(namespace)
        self.store = store
        self.instructions = instructions
        self.actions: tuple[ActionKind, ...] = tuple(actions)
        self.procedure = procedure if "instructions" in self.actions else None
        self.top_k = _check_positive(top_k, "top_k")
        self.memory_tokens = _check_positive(memory_tokens, "memory_tokens")
        self.conversation_tokens = _check_positive(conversation_tokens, "conversation_tokens")
        self.dedupe = (
            None
            if duplicate_threshold is None
            else Dedupe(threshold=duplicate_threshold, score=duplicate_score)
        )
        self.max_facts = None if max_facts is None else _check_positive(max_facts, "max_facts")
        self.merge_threshold = Dedupe(threshold=merge_threshold).threshold
        self.layout: Layout = layout
        self.cursors = Cursors()

    # ------------------------------------------------------------------ the flow

    def _facts(self, store: BaseStore, root: tuple[str, ...]) -> FactLayout:
        return LangmemFacts(store, root) if self.layout == "langmem" else TierFacts(store, root)

    def _flow(
        self, input: Any, config: RunnableConfig | None, context: Any, store: BaseStore | None
    ) -> Flow[ManagerResult]:
        """One call, as a flow (see the module docstring)."""
        turns = to_turns(messages_of(input))
        config = ensure_config(config)
        configurable: Mapping[str, Any] = config.get("configurable") or {}
        context, graph_store = resolve_context(context)
        store = store or self.store or graph_store
        if store is None:
            raise MemoryToolConfigError(
                "MemoryManager: no store - pass store= to the manager or run it in a graph "
                "compiled with store=..."
            )
        root = self.template.fill(context, configurable)
        thread = configurable.get("thread_id")
        thread_id = None if thread is None else str(thread)
        cursor = None if thread_id is None else (root, thread_id)
        new = self.cursors.new_turns(cursor, turns)
        new_from = len(turns) - len(new)
        candidates = [t.text for t in new if t.role == "user" and t.text.strip()]
        if not candidates:
            self.cursors.advance(cursor, turns)
            return ManagerResult(root, thread_id, 0, skipped="no new user message")
        facts = self._facts(store, root)
        related = yield from facts.related("\n".join(candidates)[-4000:], self.top_k)
        if self.dedupe is not None and self._all_duplicates(candidates, related):
            self.cursors.advance(cursor, turns)
            return ManagerResult(root, thread_id, 0, skipped="duplicate", shown=related)
        shown = within_budget(related, self.memory_tokens)
        procedures = ProceduralMemory(store, namespace=root)
        procedure: Procedure | None = None
        if self.procedure is not None:
            procedure = yield from call(procedures, "current", self.procedure)
        prompt = build_prompt(
            turns=turns,
            new_from=new_from,
            memories=shown,
            procedure=procedure,
            procedure_name=self.procedure,
            actions=self.actions,
            instructions=self.instructions,
            conversation_tokens=self.conversation_tokens,
        )
        answer = yield from call(_Model(self.structured), "invoke", prompt, config)
        actions, malformed = parse_actions(answer)
        plan = Plan(self.actions, shown, self.procedure, procedure, self.dedupe)
        valid, others = validate(actions, plan)
        attribution = Attribution(author="memory_manager", run_id=thread_id)
        outcomes = yield from apply(
            valid,
            facts=facts,
            episodes=EpisodicMemory(store, namespace=root),
            procedures=procedures,
            plan=plan,
            attribution=attribution,
        )
        if self.max_facts is not None:
            outcomes += yield from compact(
                facts,
                max_facts=self.max_facts,
                merge_threshold=self.merge_threshold,
                attribution=attribution,
            )
        self.cursors.advance(cursor, turns)
        position = {id(a): i for i, a in enumerate(actions)}
        decided = sorted(
            [*others, *outcomes], key=lambda o: position.get(id(o.action), len(actions))
        )
        return ManagerResult(root, thread_id, 1, outcomes=[*malformed, *decided], shown=shown)

    def _all_duplicates(self, candidates: list[str], related: list[Any]) -> bool:
        """Whether every candidate duplicates a related fact. The store's score is the similarity
        to the query, which is the candidate itself only when there is one candidate."""
        assert self.dedupe is not None
        dedupe = self.dedupe if len(candidates) == 1 else self.dedupe.lexical()
        return all(dedupe.match(text, related) is not None for text in candidates)

    # ------------------------------------------------------------------ running it

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        store: BaseStore | None = None,
        **kwargs: Any,
    ) -> ManagerResult:
        """Process a conversation on the sync APIs of the model and the store."""
        return run_flow(self._flow(input, config, context, store))

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        store: BaseStore | None = None,
        **kwargs: Any,
    ) -> ManagerResult:
        """Process a conversation on the async APIs of the model and the store."""
        return await arun_flow(self._flow(input, config, context, store))

    def as_node(
        self, *, messages_key: str = "messages", executor: BackgroundManager | None = None
    ) -> Runnable[Any, dict[str, Any]]:
        """A LangGraph node (``graph.add_node("remember", manager.as_node())``) that processes the
        state's ``messages_key`` in the hot path, or hands it to ``executor`` (processed after its
        debounce) and returns at once; ``executor`` must run this manager. The node changes no
        state."""
        if executor is not None and executor.manager is not self:
            raise InvalidArgumentError("as_node: the executor must be built on this manager")

        def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            messages = _state_messages(state, messages_key)
            if executor is not None:
                context, store = resolve_context(None)
                executor.submit(messages, config, context=context, store=self.store or store)
            else:
                self.invoke(messages, config)
            return {}

        async def anode(state: Any, config: RunnableConfig) -> dict[str, Any]:
            messages = _state_messages(state, messages_key)
            if executor is not None:
                context, store = resolve_context(None)
                executor.submit(messages, config, context=context, store=self.store or store)
            else:
                await self.ainvoke(messages, config)
            return {}

        return RunnableLambda(node, afunc=anode, name="remember")

    def __repr__(self) -> str:
        return f"MemoryManager(namespace={self.template.labels!r}, layout={self.layout!r})"


class _Model:
    """The structured-output model as a flow step. ``invoke`` is its sync path, except while a
    background manager flushes at interpreter exit (``WITHOUT_POOL``): thread pools refuse work
    then, and the sync path of ``with_structured_output(include_raw=True)`` needs one, so the
    async path runs on a pool-free loop instead."""

    def __init__(self, runnable: Runnable[Any, Any]) -> None:
        self.runnable = runnable

    def invoke(self, prompt: Any, config: RunnableConfig) -> Any:
        if WITHOUT_POOL.get():
            return run_without_pool(self.runnable.ainvoke(prompt, config))
        return self.runnable.invoke(prompt, config)

    async def ainvoke(self, prompt: Any, config: RunnableConfig) -> Any:
        return await self.runnable.ainvoke(prompt, config)


def _state_messages(state: Any, key: str) -> list[Any]:
    """The messages of a graph state (a mapping or an object with the attribute ``key``)."""
    messages = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    return list(messages or [])
