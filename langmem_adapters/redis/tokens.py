"""The TAG tokens of Query Engine mode: what an item's ``p`` (namespace) and ``t`` (value) fields
hold, and the query clauses that match them.

A token is the 12-byte blake2b of a kind, a path's JSON and (for ``e``) a canonical value's JSON:
fixed-size, so nothing needs escaping, and stable across versions (stored tags must keep matching).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from json.encoder import encode_basestring
from typing import Any

from langmem_adapters.core.filters import Condition

__all__ = [
    "namespace_tags",
    "namespace_tokens",
    "path_json",
    "path_token",
    "pushdown",
    "token",
    "value_tokens",
]

_INT = re.compile(r"-?[0-9]+")
_JSON = json.JSONEncoder(ensure_ascii=False)


# Cached: every put writes its namespace's JSON in the item's meta; a batch of 100 puts costs
# 1.13-1.17x the client CPU without the cache (docs/architecture.md).
@lru_cache(maxsize=8192)
def path_json(path: tuple[str, ...]) -> str:
    """A path (or namespace) as JSON text, as tokens and item metas hold it (cached)."""
    return _JSON.encode(list(path))


def _path_hash(kind: str, path: tuple[str, ...]) -> hashlib.blake2b:
    """blake2b after ``kind`` and the path's JSON: the tokens of one path continue a copy of it."""
    return hashlib.blake2b(
        f"{kind}{path_json(path)}".encode("utf-8", "surrogatepass"), digest_size=12
    )


def token(kind: str, path: Sequence[str], value: Any = None) -> str:
    """A fixed-size TAG for "path exists" (``x``) or "path equals value" (``e``): nothing to escape."""
    h = _path_hash(kind, tuple(path)).copy()
    h.update(_canon_json(value).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def path_token(kind: str, path: tuple[str, ...]) -> str:
    """``token`` of a value-free kind (``x`` for a path, ``n`` for a namespace prefix)."""
    return token(kind, path)


def _canon_json(v: Any) -> str:
    """JSON text that is equal exactly when values are ``json_equal`` (1 == 1.0, True != 1, key order ignored)."""
    if isinstance(v, str):
        return encode_basestring(v)
    if isinstance(v, bool) or v is None:
        return "true" if v is True else "false" if v is False else "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return json.dumps(_canon(v), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _canon(v: Any) -> Any:
    """``v`` with whole floats as ints, mappings as dicts and tuples as lists; built without
    recursion, as values nest up to ``MAX_NESTING`` levels (two Python frames a level would not)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, v)]
    while stack:
        parent, slot, x = stack.pop()
        if isinstance(x, float) and x.is_integer():
            parent[slot] = int(x)
        elif isinstance(x, Mapping):
            obj = parent[slot] = dict.fromkeys(x)
            stack.extend((obj, k, c) for k, c in x.items())
        elif isinstance(x, (list, tuple)):
            arr = parent[slot] = [None] * len(x)
            stack.extend((arr, i, c) for i, c in enumerate(x))
        else:
            parent[slot] = x
    return root[0]


class _PathTokens:
    """A node of the value-token cache (:class:`_TokenCache`): one value path's ``x`` token, its children, and its cached ``e`` tokens of strings and numbers
    (one dict per type: ``True == 1`` in Python, but their tokens differ)."""

    __slots__ = ("children", "equals", "exists", "path", "values")

    def __init__(self, path: tuple[str, ...]) -> None:
        self.path = path
        self.exists = token("x", path)
        self.equals = _path_hash("e", path)
        self.children: dict[str, _PathTokens] = {}
        self.values: dict[type, dict[Any, str]] = {str: {}, int: {}, float: {}}

    def child(self, key: str) -> _PathTokens:
        node = self.children.get(key)
        if node is None:
            node = self.children[key] = _PathTokens((*self.path, key))
            _TokenCache.entries += 1
        return node

    def value(self, v: Any) -> str:
        """``token("e", path, v)``."""
        cache = self.values.get(type(v))
        if cache is None:
            return token("e", self.path, v)
        found = cache.get(v)
        if found is None:
            h = self.equals.copy()
            h.update(_canon_json(v).encode("utf-8", "surrogatepass"))
            found = cache[v] = h.hexdigest()
            _TokenCache.entries += 1
        return found


class _TokenCache:
    """The tree of cached path tokens, dropped whole when it holds 16384 entries (paths and values).
    Without it a batch of 100 puts costs 1.38-1.41x the client CPU (bench items), 1.18x with
    langmem's nested values, 1.13x with a vector index; a single put 1.08-1.12x (architecture.md)."""

    root = _PathTokens(())
    entries = 0

    @classmethod
    def node(cls, path: Sequence[str]) -> _PathTokens:
        if cls.entries >= 16384:
            cls.root, cls.entries = _PathTokens(()), 0
        node = cls.root
        for key in path:
            node = node.child(key)
        return node


_LEAVES = frozenset({str, int, float, bool, type(None), list})


def value_tokens(value: Mapping[str, Any], node: _PathTokens | None = None) -> list[str]:
    """Tokens of every path reached through objects only (see :func:`pushdown`)."""
    if node is None:
        node = _TokenCache.node(())
    out: list[str] = []
    children = node.children
    for k, v in value.items():
        child = children.get(k) or node.child(k)
        out += (child.exists, child.value(v))
        if type(v) not in _LEAVES and isinstance(v, Mapping):
            out += value_tokens(v, child)
    return out


# Cached: every put writes them (``namespace_tags``, and the vector document's ``p``); without this
# cache and the path tokens' (the one before it), a batch of 100 puts costs 1.34-1.35x the client CPU.
@lru_cache(maxsize=8192)
def namespace_tokens(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The ``n`` tokens of a namespace and each of its prefixes (what a prefix search matches)."""
    return tuple(path_token("n", namespace[:i]) for i in range(1, len(namespace) + 1))


def namespace_tags(namespace: tuple[str, ...]) -> str:
    """The ``p`` field of the namespace's items: its tokens, joined."""
    return ",".join(namespace_tokens(namespace))


def pushdown(cond: Condition) -> str | None:
    """The Query Engine clause equivalent to a condition, or None when it is checked client-side.

    Paths without integer-like segments only traverse objects, where the tokens are exact; ranges
    and array paths are evaluated with ``matches`` on the candidates.
    """
    if any(_INT.fullmatch(p) for p in cond.path):
        return None
    if cond.op in ("$eq", "$ne"):
        clause = f"@t:{{{_TokenCache.node(cond.path).value(cond.value)}}}"
        return clause if cond.op == "$eq" else f"-{clause}"
    if cond.op in ("$in", "$nin") and cond.value:
        clause = "@t:{" + " | ".join(token("e", cond.path, v) for v in cond.value) + "}"
        return clause if cond.op == "$in" else f"-{clause}"
    if cond.op == "$exists":
        return ("" if cond.value else "-") + f"@t:{{{_TokenCache.node(cond.path).exists}}}"
    return None
