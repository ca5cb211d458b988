"""The MCP server: our memory tools on a store, registered on the ``mcp`` SDK's ``FastMCP``
(mcp 1.x), served on stdio (:func:`serve_stdio`) or streamable HTTP (:func:`serve_http`).

Each MCP tool keeps the argument schema of the LangChain tool behind it (so the SDK validates the
same fields) and runs that tool for the caller's namespace; what the tool reports as the model's
mistake comes back as an MCP tool error (``isError``), with nothing written.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import uvicorn
from langgraph.store.base import BaseStore
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from langmem_adapters.mcp_server.access import (
    Gate,
    Namespaces,
    Tokens,
    request_user,
)
from langmem_adapters.mcp_server.toolset import MCP_TOOLS, McpTool, ToolCache, ToolFailure, run_tool

__all__ = ["build_server", "serve_http", "serve_stdio"]

INSTRUCTIONS = (
    "Long-term memory that persists across conversations. search_memory before answering "
    "questions about the user; save_memory for new facts and preferences, update_memory to "
    "correct one (by id), forget_memory when one stops being true. record_episode / "
    "search_episodes keep past tasks and how they went; read_instructions / update_instructions "
    "keep versioned instructions."
)

RootOf = Callable[[Context[Any, Any, Any]], tuple[str, ...]]


def _not_none(annotation: Any) -> Any:
    """``T`` for ``T | None`` (an argument the MCP tool requires), else ``annotation``."""
    if get_origin(annotation) in (Union, UnionType):
        kept = [a for a in get_args(annotation) if a is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _parameters(schema: type[BaseModel], spec: McpTool) -> list[inspect.Parameter]:
    """The tool's arguments as keyword parameters FastMCP derives its schema from (pinned ones
    left out), with their types, defaults and descriptions."""
    parameters = []
    for name, info in schema.model_fields.items():
        if name in spec.pinned:
            continue
        kind: Any = info.annotation
        default = info.default
        if name in spec.required:
            kind, default = _not_none(kind), inspect.Parameter.empty
        elif info.is_required():
            default = inspect.Parameter.empty
        annotation = Annotated[kind, Field(description=info.description)]
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return parameters


def _register(
    server: FastMCP, spec: McpTool, store: BaseStore, cache: ToolCache, root_of: RootOf
) -> None:
    """Add one memory tool to ``server``."""
    shape = spec.make(store, ("schema",))  # the schema and description do not depend on the root
    schema = shape.tool_call_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel)
    parameters = _parameters(schema, spec)
    parameters.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    async def call(ctx: Context[Any, Any, Any], **arguments: Any) -> str:
        try:
            tool = cache.get(root_of(ctx), spec.name)
            return await run_tool(tool, {**arguments, **spec.pinned}, f"mcp-{ctx.request_id}")
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    setattr(call, "__signature__", inspect.Signature(parameters))  # noqa: B010
    call.__annotations__ = {p.name: p.annotation for p in parameters}
    server.add_tool(
        call,
        name=spec.name,
        description=spec.description or shape.description,
        annotations=ToolAnnotations(
            readOnlyHint=spec.read_only,
            destructiveHint=spec.destructive,
            openWorldHint=False,
        ),
    )


def build_server(
    store: BaseStore,
    namespaces: Namespaces,
    *,
    user: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    name: str = "langmem-memory",
) -> FastMCP:
    """A FastMCP server with the memory tools on ``store``.

    The namespace of a call is ``namespaces`` filled with the HTTP request's user (see
    :mod:`~langmem_adapters.mcp_server.access`), else ``user`` (the stdio client's).
    """
    server = FastMCP(name, instructions=INSTRUCTIONS, host=host, port=port, log_level="WARNING")
    cache = ToolCache(store)

    def root_of(ctx: Context[Any, Any, Any]) -> tuple[str, ...]:
        request = ctx.request_context.request
        return namespaces.root(user if request is None else request_user(request))

    for spec in MCP_TOOLS:
        _register(server, spec, store, cache, root_of)
    return server


async def serve_stdio(server: FastMCP) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    await server.run_stdio_async()


async def serve_http(server: FastMCP, tokens: Tokens | None) -> None:
    """Serve streamable HTTP at ``/mcp`` (and ``/users/NAME/mcp``) on the server's host and port,
    behind the token and user :class:`~langmem_adapters.mcp_server.access.Gate`."""
    app = Gate(server.streamable_http_app(), tokens)
    config = uvicorn.Config(
        app, host=server.settings.host, port=server.settings.port, log_level="warning"
    )
    await uvicorn.Server(config).serve()
