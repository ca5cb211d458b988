"""The one way a memory tool is made: from one flow function and one argument schema.

A tool is declared as a list of :class:`Arg` (what the model sees: names, types, defaults,
descriptions) and a flow ``flow(env, *arguments)`` (:mod:`langmem_adapters.memory.flows`) that
yields calls of tiers or of the store. :func:`build_tool` gives it the signature LangChain infers
the JSON schema from, plus the injected ``runtime``, and runs the flow with ``run_flow`` for
``invoke`` and ``arun_flow`` for ``ainvoke``. Errors the model can fix become a ``ToolException``
(the model sees the message and nothing was changed); set-up errors reach the caller.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from langchain_core.tools import StructuredTool, ToolException
from langgraph.prebuilt import ToolRuntime
from langgraph.store.base import BaseStore
from pydantic import Field, ValidationError

from langmem_adapters.errors import (
    ConcurrentWriteError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidMemoryQueryError,
    InvalidMemoryWriteError,
    InvalidValueError,
    MemoryTypeError,
    NonJSONValueError,
    RecordNotFoundError,
)
from langmem_adapters.memory.flows import Flow, arun_flow, run_flow
from langmem_adapters.tools.env import ToolEnv, resolve_env
from langmem_adapters.tools.templates import NamespaceTemplate

__all__ = [
    "MODEL_ERRORS",
    "Arg",
    "ToolInputError",
    "ToolSpec",
    "build_tool",
    "validation_message",
]

ResponseFormat = Literal["content", "content_and_artifact"]


class ToolInputError(InvalidArgumentError):
    """Bad tool input the model can correct; reported to it as a tool error."""


#: Errors caused by the model's arguments: turned into a ToolException so the model sees them.
MODEL_ERRORS: tuple[type[Exception], ...] = (
    ToolInputError,
    RecordNotFoundError,
    ConcurrentWriteError,
    InvalidMemoryWriteError,
    InvalidMemoryQueryError,
    MemoryTypeError,
    InvalidFilterError,
    InvalidValueError,
    NonJSONValueError,
)


@dataclass(frozen=True)
class Arg:
    """One argument of a tool as the model sees it; ``keyword_only`` as in a ``def`` after ``*``."""

    name: str
    type: Any
    description: str
    default: Any = inspect.Parameter.empty
    keyword_only: bool = False

    def parameter(self) -> inspect.Parameter:
        """The parameter LangChain reads the argument's JSON schema from."""
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if self.keyword_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        # The type is only known at run time (e.g. ``Literal`` of the permitted actions).
        annotation = Annotated[self.type, Field(description=self.description)]  # type: ignore[name-defined]
        return inspect.Parameter(self.name, kind, default=self.default, annotation=annotation)


@dataclass(frozen=True)
class ToolSpec:
    """A memory tool, written once: its name, its description, its arguments and its flow
    ``flow(env, *arguments)`` (arguments in the order of ``args``)."""

    name: str
    description: str
    args: Sequence[Arg]
    flow: Callable[..., Flow[Any]]


def validation_message(tool_name: str) -> Callable[[ValidationError], str]:
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


@contextmanager
def _reported_to_model() -> Iterator[None]:
    """Turn the errors the model can fix into the ToolException LangChain shows it."""
    try:
        yield
    except MODEL_ERRORS as exc:
        raise ToolException(str(exc)) from exc


def build_tool(
    spec: ToolSpec,
    *,
    template: NamespaceTemplate,
    store: BaseStore | None,
    response_format: ResponseFormat = "content",
) -> StructuredTool:
    """The tool of ``spec`` on the store and namespace given, for ``invoke`` and ``ainvoke``.

    ``runtime`` (LangGraph's ``ToolRuntime``, injected by ``ToolNode`` and hidden from the model)
    follows the arguments with the kind of the last one.
    """
    name, args = spec.name, spec.args
    parameters = [arg.parameter() for arg in args]
    runtime_kind = parameters[-1].kind if parameters else inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters.append(
        inspect.Parameter("runtime", runtime_kind, default=None, annotation=ToolRuntime[Any, Any])
    )
    returns = str if response_format == "content" else Any
    signature = inspect.Signature(parameters, return_annotation=returns)

    def start(call_args: tuple[Any, ...], call_kwargs: dict[str, Any]) -> Flow[Any]:
        bound = signature.bind(*call_args, **call_kwargs)
        bound.apply_defaults()
        env: ToolEnv = resolve_env(template, store, bound.arguments["runtime"], name)
        return spec.flow(env, *(bound.arguments[arg.name] for arg in args))

    def func(*call_args: Any, **call_kwargs: Any) -> Any:
        steps = start(call_args, call_kwargs)
        with _reported_to_model():
            return run_flow(steps)

    async def coroutine(*call_args: Any, **call_kwargs: Any) -> Any:
        steps = start(call_args, call_kwargs)
        with _reported_to_model():
            return await arun_flow(steps)

    for function in (func, coroutine):
        # What LangChain reads the schema from (``inspect.signature``, ``get_type_hints``).
        cast(Any, function).__signature__ = signature
        function.__annotations__ = {p.name: p.annotation for p in parameters}
        function.__annotations__["return"] = returns
    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=spec.description,
        response_format=response_format,
        handle_tool_error=True,
        handle_validation_error=validation_message(name),
    )
