"""The memory tools over the Model Context Protocol (``langmem-adapters mcp``, extra ``[mcp]``).

Agents that are not LangGraph graphs (desktop assistants, IDE agents, other frameworks) get the
same memory tools as :func:`~langmem_adapters.tools.create_memory_tools`: facts (``save_memory``,
``search_memory``, ``update_memory``, ``forget_memory``), episodes (``record_episode``,
``search_episodes``) and instructions (``read_instructions``, ``update_instructions``), one
namespace per user. See ``docs/mcp.md``.
"""

from langmem_adapters.mcp_server.access import Gate, Namespaces, Tokens, check_bind
from langmem_adapters.mcp_server.server import build_server, serve_http, serve_stdio
from langmem_adapters.mcp_server.toolset import MCP_TOOLS

__all__ = [
    "MCP_TOOLS",
    "Gate",
    "Namespaces",
    "Tokens",
    "build_server",
    "check_bind",
    "serve_http",
    "serve_stdio",
]
