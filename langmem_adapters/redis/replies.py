"""What an ``FT.SEARCH`` reply read by the client says beyond its rows: its count, and whether the
server ran past its query timeout (and answered only the rows found so far)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langmem_adapters.errors import SearchTimeoutError
from langmem_adapters.redis.layout import text

__all__ = ["count_command", "timeout_warning", "total_results"]


def count_command(index: str, query: str) -> tuple[Any, ...]:
    """The FT.SEARCH that counts ``query``'s matches in ``index`` (read with :func:`total_results`).
    ``LIMIT 0 1``, not ``LIMIT 0 0``: a count-only reply past the server's query timeout comes back
    short and without the warning, even under RESP3 (on RediSearch 2.10 with ``TIMEOUT 1``, 60,000
    items counted as 17,799 under a namespace and 18,699 in all, unwarned)."""
    return ("FT.SEARCH", index, query, "NOCONTENT", "LIMIT", 0, 1, "DIALECT", 2)


def timeout_warning(reply: Any) -> str | None:
    """The warning of an FT.SEARCH reply that ran past the server's query timeout (``TIMEOUT``;
    with ``ON_TIMEOUT return`` the reply holds the rows found so far), or None. Only a RESP3 reply
    (a map) carries warnings: the scripts call FT.SEARCH under RESP3 for it (``lua/ft_search.lua``,
    which checks the same word)."""
    if not isinstance(reply, Mapping):
        return None
    for w in reply.get("warning", reply.get(b"warning", [])) or []:
        if "timeout" in text(w).lower():
            return text(w)
    return None


def total_results(reply: Any) -> int:
    """``total_results`` of an FT.SEARCH reply (a map under RESP3, a list under RESP2); a reply
    past the server's query timeout counted only part: raised."""
    if (why := timeout_warning(reply)) is not None:
        raise SearchTimeoutError(why)
    if isinstance(reply, dict):
        return int(reply.get("total_results") or reply.get(b"total_results") or 0)
    return int(reply[0])
