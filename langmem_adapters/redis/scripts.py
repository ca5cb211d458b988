"""The Lua scripts of the Redis stores (``lua/*.lua``), and the requests a plan sends.

A plan yields :class:`Round`\\ s of :class:`Call`\\ s; a call naming a script is sent as ``EVALSHA``
of the script's SHA1 (see :mod:`langmem_adapters.redis.connection`), and reloaded when the server
has forgotten it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from langmem_adapters.redis.layout import GRACE_MS, NO_EXPIRY

__all__ = ["SCRIPTS", "SHA", "Call", "Round"]


def _source(name: str) -> str:
    """A script's text, with the shared registry step, the shared ``ft_search`` (``FT.SEARCH`` that
    refuses a timed-out reply), the information fusion's shared ``candidates`` and the layout's
    constants filled in."""
    lua = resources.files("langmem_adapters.redis").joinpath("lua")
    src = lua.joinpath(f"{name}.lua").read_text("utf-8")
    src = src.replace("-- REGISTRY_TTL", lua.joinpath("registry_ttl.lua").read_text("utf-8"))
    src = src.replace("-- FT_SEARCH", lua.joinpath("ft_search.lua").read_text("utf-8"))
    src = src.replace("-- CANDIDATES", lua.joinpath("candidates.lua").read_text("utf-8"))
    return src.replace("NO_EXPIRY", str(NO_EXPIRY)).replace("GRACE", str(GRACE_MS))


#: Script name -> Lua source (``lua/<name>.lua``): ``write`` (every write of a batch), ``register``
#: (cluster: namespaces first), ``read_ns`` (plain-mode reads), ``search``, for namespace-wide
#: operations ``drop`` (delete namespaces) and ``count`` (Query Engine counts), ``reindex_switch``
#: (the atomic end of a reindex), ``lexical`` (the lexical side of a hybrid search), ``information``
#: (the same under the information fusion), ``fused`` (a whole hybrid search under it) and
#: ``words`` (a namespace's word counts, plain mode's collection statistics).
_NAMES = "write register read_ns search drop count reindex_switch lexical information fused words"
SCRIPTS = {name: _source(name) for name in _NAMES.split()}
#: Script name -> SHA1 of its source, for ``EVALSHA``.
SHA = {name: hashlib.sha1(src.encode()).hexdigest() for name, src in SCRIPTS.items()}


@dataclass(frozen=True)
class Call:
    """One command; ``script`` names a Lua script of ``SCRIPTS``, called with ``keys`` and ``args``."""

    args: tuple[Any, ...] = ()
    script: str | None = None
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Round:
    """Commands sent in one pipeline; with ``check=False`` errors come back as results instead of raising."""

    calls: list[Call]
    check: bool = True
