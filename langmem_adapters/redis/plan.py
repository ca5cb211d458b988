"""Key layout, Lua scripts and the batch logic of the Redis stores, written once for sync and async.

A batch runs as a generator (a "plan") that yields requests: ``Embed`` (texts to embed) or
``Round`` (commands sent together in one pipeline). ``RedisStore`` and ``AsyncRedisStore`` only
differ in the driver that answers them, as in :mod:`langmem_adapters.postgres.queries`.

Layout for a store with prefix ``P`` (``{h}`` is a hash tag derived from the namespace, so all keys
of one namespace live in one cluster slot):

- ``P:i:{h}:<len(ns)>:<ns>:<key>``: an item, a HASH: ``m`` the item's JSON text, ``c`` created_at,
  ``x`` expiry ms, ``h`` embedded-text hashes, ``e`` the vectors (base64 float32). Query Engine mode
  adds what the index ``P:items`` reads: ``u`` updated_at, ``p`` namespace tokens, ``t`` value tokens.
- ``P:v:{h}:<len(ns)>:<ns>:<key>``: Query Engine mode, an item with vectors: a JSON document with
  its vectors and the item's ``p`` and ``t`` (for filtered KNN), indexed by the vector index
  (``P:vec:...``). A hash holds one vector per field; a JSON array holds every vector of the item.
- ``P:z:{h}:<ns>``: ZSET of the namespace's item keys scored by expiry (ms, ``NO_EXPIRY`` if none).
- ``P:ns``: ZSET of namespaces scored by the latest expiry of their items (the namespace registry).

On a single server all writes of a batch, with their bookkeeping, run in one Lua script call, so the
batch is atomic and the registry exact. On a Redis Cluster (``cluster=True``) a script call may only
touch one slot: the batch's namespaces are first registered in ``P:ns`` (scores only grow, so an
entry covers every live item of its namespace), then each namespace's writes run in their own script
call, atomic per namespace. Registry entries may then outlive their items (deletes, failed writes):
``list_namespaces`` checks each candidate's ZSET for a live item.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from itertools import pairwise
from json.encoder import encode_basestring
from typing import Any, Literal

import numpy as np
import orjson
from langgraph.store.base import Item, ListNamespacesOp, Op, Result, SearchItem, SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.filters import Condition, matches
from langmem_adapters.core.items import make_item, make_search_item
from langmem_adapters.core.ops import Write, load_json, plan_batch
from langmem_adapters.core.store import Embed, Plan
from langmem_adapters.core.vectors import (
    IndexSpec,
    SearchStats,
    check_vectors,
    extract_texts,
    search_breadth,
    text_hash,
)

__all__ = ["SCRIPTS", "Call", "Embed", "Keys", "Mode", "Round", "plan", "setup_plan", "sweep_plan"]

Mode = Literal["query_engine", "plain"]
NO_EXPIRY = 9_000_000_000_000_000  # ms: "never" as a finite ZSET score
GRACE_MS = 3_600_000  # how long index entries of expired items stay for sweep_ttl() to count
# HNSW search breadth by index size, for recall@10 >= 0.95 against exact search with the default
# build (M=16, EF_CONSTRUCTION=64) on hard, weakly clustered data, with margin for the spread between
# builds and query sets: measured 0.985-0.988 at 10k items with 150 (100 gave 0.962), 0.967-0.978 at
# 50k with 300 (250 gave 0.957), and 0.976-0.985 at 100k with 600 (400 gave 0.951-0.971).
EF_RUNTIME = ((20_000, 150), (50_000, 300), (50_001, 600))
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INT = re.compile(r"-?[0-9]+")
_PREFIX = re.compile(r"[A-Za-z0-9_\-]+")

_REGISTRY_TTL = """
local top = redis.call('ZRANGE', reg, -1, -1, 'WITHSCORES')
if top[2] then
  if tonumber(top[2]) >= NO_EXPIRY then redis.call('PERSIST', reg) else redis.call('PEXPIREAT', reg, top[2] + GRACE) end
end
"""

WRITE_SCRIPT = """
-- KEYS: the registry when ARGV[4] is "1" (not on a cluster, where it lives in another slot), then
-- per namespace group its ZSET and its item keys.
-- ARGV: now_ms - GRACE, query engine ("1"/"0"), groups, registry, now (us: created_at of new items
-- and updated_at); per group: ns, n; per item its op, then by op:
--   p put / a put-if-absent: ttl_ms, x, m, then in Query Engine mode p and t (tokens);
--   P / A the same for an item with vectors: ttl_ms, x, m, h, e, then p, t and the vector document;
--   d delete: nothing; t touch (refresh TTL): ttl_ms, x.
-- Returns the number of items written.
-- Entries of expired items are kept for GRACE ms (readers skip them) so sweep_ttl() can count them;
-- a group drops them when it deletes or writes an item with a TTL (a group of permanent writes
-- leaves them to the next such group or to sweep_ttl(): that saves a call per namespace).
-- Query Engine mode only runs on a single server: the vector document's key is derived here.
local old, qe, reg, c = ARGV[1], ARGV[2] == '1', ARGV[4] == '1' and KEYS[1], ARGV[5]
local function vkey(key) return (string.gsub(key, '^([^:]*):i:', '%1:v:')) end
local listed = {}  -- registry scores and namespaces
local a, k, written = 6, reg and 2 or 1, 0
for g = 1, tonumber(ARGV[3]) do
  local z, ns, n = KEYS[k], ARGV[a], tonumber(ARGV[a + 1])
  local forever = false  -- an item without expiry was written: the ZSET's top score is NO_EXPIRY
  local expiring = false  -- an item was deleted or written with a TTL
  k = k + 1
  a = a + 2
  for i = 1, n do
    local key, op = KEYS[k], ARGV[a]
    k = k + 1
    if op == 'd' then
      a = a + 1
      expiring = true
      redis.call('DEL', key)
      if qe then redis.call('DEL', vkey(key)) end
      redis.call('ZREM', z, key)
    elseif op == 't' then
      local ttl, x = ARGV[a + 1], ARGV[a + 2]
      a = a + 3
      if redis.call('PEXPIRE', key, ttl) == 1 then  -- 0: the item is gone, nothing to refresh
        redis.call('HSET', key, 'x', x)
        if qe then redis.call('PEXPIRE', vkey(key), ttl) end
        redis.call('ZADD', z, x, key)
      end
    else
      local ttl, x, m = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
      local with = op == 'P' or op == 'A'  -- the item has vectors now
      local h, e, p, t, doc = '[]', ''
      a = a + 4
      if with then h, e, a = ARGV[a], ARGV[a + 1], a + 2 end
      if qe then p, t, a = ARGV[a], ARGV[a + 1], a + 2 end
      if qe and with then doc, a = ARGV[a], a + 1 end
      -- the stored created_at, false when there is no item (the read doubles as the existence test),
      -- the stored text hashes ('[]' or absent: the item has no vectors) and expiry
      local got = redis.call('HMGET', key, 'c', 'h', 'x')
      local stored = got[1]
      if not ((op == 'a' or op == 'A') and stored) then
        written = written + 1
        local vectors = with or (got[2] and got[2] ~= '[]')  -- now or before
        local v = qe and vectors and vkey(key)
        if qe and vectors then
          redis.call('HSET', key, 'm', m, 'h', h, 'e', e, 'c', stored or c, 'x', x, 'u', c, 'p', p, 't', t)
          if with then redis.call('JSON.SET', v, '$', doc) else redis.call('DEL', v) end
        elseif qe then  -- no vectors now or before: h and e stay absent
          redis.call('HSET', key, 'm', m, 'c', stored or c, 'x', x, 'u', c, 'p', p, 't', t)
        else
          redis.call('HSET', key, 'm', m, 'h', h, 'e', e, 'c', stored or c, 'x', x)
        end
        -- a vector document gets the item's expiry whatever it had (JSON.SET keeps a key's TTL)
        if ttl ~= '' then
          expiring = true
          redis.call('PEXPIRE', key, ttl)
          if qe and with then redis.call('PEXPIRE', v, ttl) end
        else
          if stored then redis.call('PERSIST', key) end
          if qe and with then redis.call('PERSIST', v) end
        end
        if got[3] ~= x then redis.call('ZADD', z, x, key) end  -- same expiry: the entry stands
        forever = forever or ttl == ''
      end
    end
  end
  if expiring then redis.call('ZREMRANGEBYSCORE', z, '-inf', old) end
  local top = forever and {ns, NO_EXPIRY} or redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')
  if top[2] then
    if reg then listed[#listed + 1] = top[2]; listed[#listed + 1] = ns end
    if tonumber(top[2]) >= NO_EXPIRY then redis.call('PERSIST', z) else redis.call('PEXPIREAT', z, top[2] + GRACE) end
  elseif reg then
    redis.call('ZREM', reg, ns)
  end
end
if reg then
  for i = 1, #listed, 1000 do  -- the registry entries of the batch, in a few ZADDs
    redis.call('ZADD', reg, unpack(listed, i, math.min(i + 999, #listed)))
  end
  redis.call('ZREMRANGEBYSCORE', reg, '-inf', old)
  REGISTRY_TTL
end
return written
""".replace("REGISTRY_TTL", _REGISTRY_TTL)

REGISTER_SCRIPT = (
    """
-- Cluster only: register namespaces in KEYS[1] before their items are written (another slot).
-- ARGV: now_ms - GRACE, then (expiry_ms, ns) pairs. Scores only grow (GT), so an entry always covers
-- the latest expiry of its namespace's items; readers check the namespace ZSET for live items.
local reg = KEYS[1]
for i = 2, #ARGV, 2 do redis.call('ZADD', reg, 'GT', ARGV[i], ARGV[i + 1]) end
redis.call('ZREMRANGEBYSCORE', reg, '-inf', ARGV[1])
"""
    + _REGISTRY_TTL
)


def _constants(src: str) -> str:
    return src.replace("NO_EXPIRY", str(NO_EXPIRY)).replace("GRACE", str(GRACE_MS))


WRITE_SCRIPT, REGISTER_SCRIPT = _constants(WRITE_SCRIPT), _constants(REGISTER_SCRIPT)

READ_NS_SCRIPT = """
-- Live items of one namespace (plain mode): KEYS[1] its ZSET; ARGV now_ms, with_vectors ("1"/"0").
-- Returns one JSON text [[meta, created, vectors?], ...]: a single reply parses fast client-side.
local rows = {}
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE')) do
  local v = redis.call('HMGET', key, 'm', 'c', 'e')
  if v[1] then
    local row = '[' .. v[1] .. ',' .. v[2]
    if ARGV[2] == '1' then row = row .. ',"' .. v[3] .. '"' end
    rows[#rows + 1] = row .. ']'
  end
end
return '[' .. table.concat(rows, ',') .. ']'
"""

SEARCH_SCRIPT = """
-- FT.SEARCH with ARGV[2..] as its arguments (NOCONTENT, or RETURN 1 d for KNN), then the meta and
-- created_at of the hits read here, as one bulk reply that parses far faster than the nested one:
-- [hits, distance of the last hit or null, [[meta, created, distance or null], ...]]. A KNN hit is
-- an item's vector document (P:v:...), read through its item (P:i:...); one whose item has no
-- vectors (a document left behind when its item was removed out of band) is left out.
-- ARGV[1] > 0 reads only that many hits plus those tied with the last of them (a KNN page whose
-- rows all match needs no more); 0 reads every hit. A hit whose key expired reads as nil and is left
-- out; ``hits`` still counts it, so the caller can tell a short window from an exhausted result.
local load = tonumber(ARGV[1])
local r = redis.call('FT.SEARCH', unpack(ARGV, 2))
local step = type(r[3]) == 'table' and 2 or 1
local rows, hits, edge, d = {}, 0, nil, 'null'
for i = 2, #r, step do
  hits = hits + 1
  d = 'null'
  if step == 2 then
    local f = r[i + 1]
    for j = 1, #f, 2 do
      if f[j] == 'd' and string.match(f[j + 1], '^[-+0-9.eE]+$') then d = f[j + 1] end
    end
  end
  if load == 0 or hits <= load or d == edge then
    local key, n = string.gsub(r[i], '^([^:]*):v:', '%1:i:')
    local v = redis.call('HMGET', key, 'm', 'c', 'h')
    if v[1] and (n == 0 or (v[3] and v[3] ~= '[]')) then
      rows[#rows + 1] = '[' .. v[1] .. ',' .. v[2] .. ',' .. d .. ']'
    end
  end
  if hits == load then edge = d end
end
return '[' .. hits .. ',' .. d .. ',[' .. table.concat(rows, ',') .. ']]'
"""

SCRIPTS = {
    "write": WRITE_SCRIPT,
    "register": REGISTER_SCRIPT,
    "read_ns": READ_NS_SCRIPT,
    "search": SEARCH_SCRIPT,
}


# --------------------------------------------------------------------------- requests


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


Request = Embed | Round


# --------------------------------------------------------------------------- layout


@lru_cache(maxsize=8192)
def _tag(ns_text: str) -> str:
    return text_hash(ns_text)[:16]


@dataclass(frozen=True)
class Keys:
    """Key names of one store; ``prefix`` lets several stores share one Redis."""

    prefix: str

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(
                f"prefix must be non-empty ASCII letters, digits, '_' or '-', got {self.prefix!r}"
            )

    def item(self, ns_text: str, key: str) -> str:
        return f"{self.prefix}:i:{{{_tag(ns_text)}}}:{len(ns_text)}:{ns_text}:{key}"

    def vectors(self, ns_text: str, key: str) -> str:
        """The item's vector document (Query Engine mode; the write script derives the same name)."""
        return f"{self.prefix}:v:{{{_tag(ns_text)}}}:{len(ns_text)}:{ns_text}:{key}"

    def zset(self, ns_text: str) -> str:
        return f"{self.prefix}:z:{{{_tag(ns_text)}}}:{ns_text}"

    @property
    def registry(self) -> str:
        return f"{self.prefix}:ns"

    @property
    def mode(self) -> str:
        return f"{self.prefix}:mode"

    def index(self, spec: IndexSpec | None) -> str:
        """The items' index (``None``), or the vector index of an embedding shape: one per shape, so
        stores with other embedders can share a prefix."""
        if spec is None:
            return f"{self.prefix}:items"
        return f"{self.prefix}:vec:{spec.kind}:{spec.distance}:{spec.vector_type}{spec.dims}"


def _s(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


_JSON = json.JSONEncoder(ensure_ascii=False)


@lru_cache(maxsize=8192)
def _path_json(path: tuple[str, ...]) -> str:
    return _JSON.encode(list(path))


@lru_cache(maxsize=8192)
def _path_hash(kind: str, path: tuple[str, ...]) -> hashlib.blake2b:
    """blake2b after ``kind`` and the path's JSON: the tokens of one path continue a copy of it."""
    return hashlib.blake2b(
        f"{kind}{_path_json(path)}".encode("utf-8", "surrogatepass"), digest_size=12
    )


def _token(kind: str, path: Sequence[str], value: Any = None) -> str:
    """A fixed-size TAG for "path exists" (``x``) or "path equals value" (``e``): nothing to escape."""
    h = _path_hash(kind, tuple(path)).copy()
    h.update(_canon_json(value).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@lru_cache(maxsize=8192)
def _path_token(kind: str, path: tuple[str, ...]) -> str:
    """``_token`` of a value-free kind (``x`` for a path, ``n`` for a namespace prefix), cached."""
    return _token(kind, path)


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
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, Mapping):
        return {k: _canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    return v


class _PathTokens:
    """One value path's ``x`` token, its children, and its cached ``e`` tokens of strings and numbers
    (one dict per type: ``True == 1`` in Python, but their tokens differ)."""

    __slots__ = ("children", "equals", "exists", "path", "values")

    def __init__(self, path: tuple[str, ...]) -> None:
        self.path = path
        self.exists = _token("x", path)
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
        """``_token("e", path, v)``."""
        cache = self.values.get(type(v))
        if cache is None:
            return _token("e", self.path, v)
        token = cache.get(v)
        if token is None:
            h = self.equals.copy()
            h.update(_canon_json(v).encode("utf-8", "surrogatepass"))
            token = cache[v] = h.hexdigest()
            _TokenCache.entries += 1
        return token


class _TokenCache:
    """The tree of cached path tokens, dropped whole when it holds 16384 entries (paths and values)."""

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


def _value_token(path: Sequence[str], value: Any) -> str:
    """``_token("e", path, value)``, cached for strings and numbers."""
    return _TokenCache.node(path).value(value)


_LEAVES = frozenset({str, int, float, bool, type(None), list})


def _value_tokens(value: Mapping[str, Any], node: _PathTokens | None = None) -> list[str]:
    """Tokens of every path reached through objects only (see :func:`_pushdown`)."""
    if node is None:
        node = _TokenCache.node(())
    out: list[str] = []
    children = node.children
    for k, v in value.items():
        child = children.get(k) or node.child(k)
        out += (child.exists, child.value(v))
        if type(v) not in _LEAVES and isinstance(v, Mapping):
            out += _value_tokens(v, child)
    return out


@lru_cache(maxsize=8192)
def _namespace_json(namespace: tuple[str, ...]) -> str:
    """The namespace as JSON text, for the items' meta (cached: a batch repeats its namespaces)."""
    return _path_json(namespace)


@lru_cache(maxsize=8192)
def _namespace_tokens(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The ``n`` tokens of a namespace and each of its prefixes (what a prefix search matches)."""
    return tuple(_path_token("n", namespace[:i]) for i in range(1, len(namespace) + 1))


@lru_cache(maxsize=8192)
def _namespace_tags(namespace: tuple[str, ...]) -> str:
    """The ``p`` field of the namespace's items: its tokens, joined."""
    return ",".join(_namespace_tokens(namespace))


def _pushdown(cond: Condition) -> str | None:
    """The Query Engine clause equivalent to a condition, or None when it is checked client-side.

    Paths without integer-like segments only traverse objects, where the tokens are exact; ranges
    and array paths are evaluated with ``matches`` on the candidates.
    """
    if any(_INT.fullmatch(p) for p in cond.path):
        return None
    if cond.op in ("$eq", "$ne"):
        clause = f"@t:{{{_value_token(cond.path, cond.value)}}}"
        return clause if cond.op == "$eq" else f"-{clause}"
    if cond.op in ("$in", "$nin") and cond.value:
        clause = "@t:{" + " | ".join(_token("e", cond.path, v) for v in cond.value) + "}"
        return clause if cond.op == "$in" else f"-{clause}"
    if cond.op == "$exists":
        return ("" if cond.value else "-") + f"@t:{{{_TokenCache.node(cond.path).exists}}}"
    return None


@lru_cache(maxsize=4096)  # items written by one batch share their timestamps
def _datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


# --------------------------------------------------------------------------- setup


def setup_plan(keys: Keys, spec: IndexSpec | None, mode: str, cluster: bool = False) -> Plan:
    """Choose the mode (``auto``: the Query Engine when FT.* and JSON.* exist) and create the index.

    The first store on a prefix records its mode, so stores sharing a prefix agree on the layout.
    On a cluster ``auto`` means plain mode: an index covers one shard only without the coordinator.
    """
    if mode not in ("auto", "query_engine", "plain"):
        raise ValueError(f"mode must be 'auto', 'query_engine' or 'plain', got {mode!r}")
    probes = [] if cluster else [Call(("FT._LIST",)), Call(("JSON.TYPE", f"{keys.prefix}:probe"))]
    info, recorded, *probed = yield Round(
        [Call(("INFO", "server")), Call(("GET", keys.mode)), *probes], check=False
    )
    version = (
        _s(info.get("redis_version", "0"))
        if isinstance(info, dict)
        else _info_field(info, "redis_version")
    )
    if tuple(int(x) for x in re.findall(r"\d+", version)[:2]) < (6, 2):
        raise RuntimeError(f"the Redis store needs Redis >= 6.2 or Valkey, found {version}")
    has_qe = bool(probed) and not any(isinstance(r, Exception) for r in probed)
    recorded = _s(recorded)
    chosen: str = (
        recorded or ("query_engine" if has_qe and mode != "plain" else "plain")
        if mode == "auto"
        else mode
    )
    if recorded and chosen != recorded:
        raise ValueError(
            f"prefix {keys.prefix!r} already holds a {recorded!r} store, not {chosen!r}"
        )
    if chosen == "query_engine":
        if not has_qe:
            raise RuntimeError(
                "mode='query_engine' needs a single Redis server with the Query Engine and JSON (Redis 8 or "
                "Redis Stack); on a Redis Cluster use mode='plain' (or 'auto')"
            )
        if recorded and any(_s(n).startswith(f"{keys.prefix}:idx") for n in probed[0]):
            raise ValueError(
                f"prefix {keys.prefix!r} holds items in the JSON layout of earlier development builds; "
                "export them with that build (`langmem-adapters export`) and import them into a new prefix"
            )
        # A new prefix holds no keys yet: its indexes skip the scan of the whole keyspace, which on a
        # busy server would slow every command until it finished.
        fresh = not recorded
        calls = [Call(_create_index(keys, None, fresh))]
        calls += [Call(_create_index(keys, spec, fresh))] if spec is not None else []
        for created in (yield Round(calls, check=False)):
            if isinstance(created, Exception) and "already exists" not in str(created):
                raise created
    yield Round([Call(("SET", keys.mode, chosen, "NX"))])
    return chosen


def _num_docs(info: Any) -> int:
    """``num_docs`` of an FT.INFO reply (a map under RESP3, a flat field/value list under RESP2)."""
    if not isinstance(info, dict):
        info = dict(zip(info[::2], info[1::2]))
    return int(float(_s(info.get("num_docs", info.get(b"num_docs", 0)))))


def _info_field(info: Any, name: str) -> str:
    """A field of a raw INFO reply (text), "0" when absent."""
    found = re.search(rf"^{name}:(\S+)", _s(info) if isinstance(info, (str, bytes)) else "", re.M)
    return found.group(1) if found else "0"


def _create_index(keys: Keys, spec: IndexSpec | None, fresh: bool = False) -> tuple[Any, ...]:
    """``FT.CREATE`` of the items' index (hashes, ``spec`` None) or of a vector index (documents);
    ``fresh``: the prefix has no keys, so the index skips its initial scan."""
    if spec is None:
        schema: list[Any] = ["p", "TAG", "SEPARATOR", ",", "t", "TAG", "SEPARATOR", ","]
        schema += ["u", "NUMERIC", "SORTABLE", "NOINDEX"]  # sorted by, never filtered on
        on, prefix = "HASH", f"{keys.prefix}:i:"
    else:
        metric = {"cosine": "COSINE", "l2": "L2", "inner_product": "IP"}[spec.distance]
        attrs: list[Any] = [
            "TYPE",
            _vector_dtype(spec)[0],
            "DIM",
            spec.dims,
            "DISTANCE_METRIC",
            metric,
        ]
        if spec.kind == "exact":
            algo = "FLAT"
        else:
            algo = "HNSW"
            attrs += [
                "M",
                int(spec.ann.get("m", 16)),
                "EF_CONSTRUCTION",
                int(spec.ann.get("ef_construction", 64)),
            ]
        schema = ["$.p[*]", "AS", "p", "TAG", "$.t[*]", "AS", "t", "TAG"]
        schema += ["$.e[*]", "AS", "e", "VECTOR", algo, len(attrs), *attrs]
        on, prefix = "JSON", f"{keys.prefix}:v:"
    scan = ("SKIPINITIALSCAN",) if fresh else ()
    return ("FT.CREATE", keys.index(spec), "ON", on, "PREFIX", 1, prefix, *scan, "SCHEMA", *schema)


def _vector_dtype(spec: IndexSpec) -> tuple[str, type[np.floating[Any]]]:
    return ("FLOAT16", np.float16) if spec.vector_type == "halfvec" else ("FLOAT32", np.float32)


# --------------------------------------------------------------------------- records


@dataclass(slots=True)
class Record:
    """An item as read back: its JSON text fields decoded, plus score or vectors when asked for."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created: int
    updated: int
    ttl: float | None
    distance: float | None = None
    raw_distance: float | None = None
    vectors: np.ndarray[Any, Any] | None = None

    @classmethod
    def parse(cls, meta: Any, created: Any) -> Record:
        m = meta if isinstance(meta, dict) else load_json(meta)
        return cls(tuple(m["ns"]), m["k"], m["v"], int(created), int(m["u"]), m["l"])

    @property
    def sort_key(self) -> tuple[Any, ...]:
        if self.distance is not None:
            return (self.distance, nsp.join(self.namespace), self.key)
        return (-self.updated, nsp.join(self.namespace), self.key)

    def item(self) -> Item:
        return make_item(
            self.namespace,
            self.key,
            self.value,
            _datetime(self.created),
            _datetime(self.updated),
        )

    def search_item(self, spec: IndexSpec | None) -> SearchItem:
        score = None if self.distance is None or spec is None else spec.score(self.distance)
        return make_search_item(
            self.namespace,
            self.key,
            self.value,
            _datetime(self.created),
            _datetime(self.updated),
            score,
        )


def _decode_vectors(raw: Any, spec: IndexSpec) -> np.ndarray[Any, Any]:
    """An item's stored vectors (base64 float32) as an (n, dims) float32 array."""
    if raw is None:
        return np.zeros((0, spec.dims), np.float32)
    return np.frombuffer(base64.b64decode(_s(raw)), np.float32).reshape(-1, spec.dims)


# --------------------------------------------------------------------------- writes


@dataclass(slots=True)
class _Entry:
    """One item of the write script: its op code, expiry and script arguments (see WRITE_SCRIPT)."""

    ns_text: str
    key: str
    op: str
    x: int
    args: tuple[Any, ...]


def _write_rounds(
    keys: Keys, mode: Mode, now_us: int, entries: list[_Entry], cluster: bool
) -> list[Round]:
    """One write-script call for all entries; on a cluster, a registry step then one call per namespace."""
    groups: dict[str, list[_Entry]] = {}
    for e in entries:
        groups.setdefault(e.ns_text, []).append(e)
    if not cluster:
        return [Round([_script_call(keys, mode, now_us, groups, registry=True)])]
    expiry = {
        ns: max(e.x for e in group)
        for ns, group in groups.items()
        if any(e.op != "d" for e in group)
    }
    register = Call(
        (now_us // 1000 - GRACE_MS, *(v for ns, x in expiry.items() for v in (x, ns))),
        "register",
        (keys.registry,),
    )
    writes = Round(
        [
            _script_call(keys, mode, now_us, {ns: group}, registry=False)
            for ns, group in groups.items()
        ]
    )
    return [Round([register]), writes] if expiry else [writes]


def _script_call(
    keys: Keys, mode: Mode, now_us: int, groups: dict[str, list[_Entry]], registry: bool
) -> Call:
    now_ms = now_us // 1000
    key_list = [keys.registry] if registry else []
    args: list[Any] = [
        now_ms - GRACE_MS,
        "1" if mode == "query_engine" else "0",
        len(groups),
        "1" if registry else "0",
        now_us,
    ]
    for ns_text, group in groups.items():
        key_list.append(keys.zset(ns_text))
        args += (ns_text, len(group))
        for e in group:
            key_list.append(keys.item(ns_text, e.key))
            args += e.args
    return Call(tuple(args), script="write", keys=tuple(key_list))


def _ttl_ms(minutes: float) -> int:
    return max(1, round(minutes * 60_000))


def _touch_entry(ns_text: str, key: str, ttl: float, now_ms: int) -> _Entry:
    """A TTL refresh: the item's own TTL, from now."""
    ttl_ms = _ttl_ms(ttl)
    return _Entry(ns_text, key, "t", now_ms + ttl_ms, ("t", str(ttl_ms), now_ms + ttl_ms))


def _put_entry(
    mode: Mode,
    ns_text: str,
    w: Write,
    now_us: int,
    vectors: list[tuple[str, str, list[float]]],
    op: str,
) -> _Entry:
    now_ms = now_us // 1000
    ttl_ms = _ttl_ms(w.ttl) if w.ttl is not None else None
    x = now_ms + ttl_ms if ttl_ms is not None else NO_EXPIRY
    meta = (
        f'{{"ns":{_namespace_json(w.namespace)},"k":{encode_basestring(w.key)},'
        f'"v":{w.value_json},"u":{now_us},"l":{"null" if w.ttl is None else repr(w.ttl)}}}'
    )
    ttl_arg = "" if ttl_ms is None else str(ttl_ms)
    if vectors:
        op = op.upper()
        hashes = orjson.dumps([[f, h] for f, h, _ in vectors]).decode()
        blob = base64.b64encode(np.asarray([v for _, _, v in vectors], np.float32).tobytes())
        args: tuple[Any, ...] = (op, ttl_arg, x, meta, hashes, blob.decode())
    else:
        args = (op, ttl_arg, x, meta)
    if mode == "query_engine":
        assert w.value is not None
        t = _value_tokens(w.value)  # distinct: one x and one e token per path
        args += (_namespace_tags(w.namespace), ",".join(t))
        if vectors:
            p = _namespace_tokens(w.namespace)
            args += (orjson.dumps({"p": p, "t": t, "e": [v for _, _, v in vectors]}).decode(),)
    return _Entry(ns_text, w.key, op, x, args)


def _embed_writes(
    keys: Keys, spec: IndexSpec, writes: list[Write]
) -> Generator[Request, Any, dict[tuple[str, str], list[tuple[str, str, list[float]]]]]:
    """Vectors for each put, reusing stored embeddings of unchanged text; only new text is embedded."""
    wanted: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for w in writes:
        if w.value is not None:
            fields = spec.fields if w.index is None else (w.index or ())
            wanted[(nsp.join(w.namespace), w.key)] = [
                (f, text_hash(t), t) for f, t in extract_texts(w.value, fields)
            ]
    todo = [keys.item(*k) for k, rows in wanted.items() if rows]
    known: dict[str, list[float]] = {}
    if todo:
        replies = yield Round([Call(("HMGET", key, "h", "e")) for key in todo])
        for h_raw, e_raw in replies:
            if h_raw is None:
                continue
            hashes = load_json(h_raw)
            for (_, h), vec in zip(hashes, _decode_vectors(e_raw, spec)):
                known[h] = vec.tolist()
    missing = sorted({t for rows in wanted.values() for _, h, t in rows if h not in known})
    if missing:
        embedded = yield Embed(missing)
        for text, vec in zip(missing, check_vectors(embedded, len(missing), spec.dims)):
            known[text_hash(text)] = vec
    return {k: [(f, h, known[h]) for f, h, _ in rows] for k, rows in wanted.items()}


# --------------------------------------------------------------------------- reads


def _get_call(keys: Keys, namespace: tuple[str, ...], key: str) -> Call:
    return Call(("HMGET", keys.item(nsp.join(namespace), key), "m", "c"))


def _get_record(reply: Any) -> Record | None:
    meta, created = reply
    return None if meta is None else Record.parse(meta, created)


def _live_namespaces(reply: Sequence[Any]) -> list[tuple[str, ...]]:
    return [nsp.split(_s(n)) for n in reply]


def _list_result(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    found = {
        ns[: op.max_depth] if op.max_depth is not None else ns
        for ns in namespaces
        if nsp.matches_all(ns, op.match_conditions)
    }
    return sorted(found)[op.offset : op.offset + op.limit]


def _under(ns: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return ns[: len(prefix)] == prefix


def _distances(
    spec: IndexSpec, matrix: np.ndarray[Any, Any], q: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """pgvector-style distances of each row to ``q``: cosine 1-cos, inner product -dot, l2 Euclidean."""
    if spec.distance == "l2":
        return np.asarray(np.linalg.norm(matrix - q, axis=1))
    dots = matrix @ q
    if spec.distance == "inner_product":
        return np.asarray(-dots)
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
    return np.asarray(1.0 - np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0))


def _score_plain(spec: IndexSpec, records: list[Record], q: list[float]) -> list[Record]:
    """Exact scoring with numpy: each item's best vector (items without vectors are dropped)."""
    pairs = [(r, r.vectors) for r in records if r.vectors is not None and len(r.vectors)]
    if not pairs:
        return []
    scored = [r for r, _ in pairs]
    matrix = np.concatenate([v for _, v in pairs])
    starts = np.cumsum([0, *(len(v) for _, v in pairs[:-1])])
    best = np.minimum.reduceat(_distances(spec, matrix, np.asarray(q, np.float32)), starts)
    for r, d in zip(scored, best):
        r.distance = float(d)
    return scored


class _Searcher:
    """Query Engine search of one op: a server query for namespace, filters and order/KNN.

    Expiry is not part of the query: a range over every document would make the server filter the
    whole index (and turn KNN into a slow hybrid search). Keys expire natively and leave the index
    by themselves; until then the search script reads them as missing. Conditions the index cannot
    answer exactly (ranges, array paths) are checked on the returned rows.
    """

    def __init__(
        self,
        keys: Keys,
        spec: IndexSpec | None,
        op: SearchOp,
        conds: tuple[Condition, ...],
        qvec: list[float] | None,
        ef: int = 0,
        broad: Collection[str] = (),
    ) -> None:
        self.keys, self.spec, self.op, self.conds, self.qvec, self.ef = (
            keys,
            spec,
            op,
            conds,
            qvec,
            ef,
        )
        prefix = tuple(op.namespace_prefix)
        self.parts = [f"@p:{{{_path_token('n', prefix)}}}"] if prefix else []
        pushed = [_pushdown(c) for c in conds]
        self.parts += [c for c in pushed if c]
        self.exact = all(c is not None for c in pushed)  # the server answers every condition
        # A namespace filter that keeps most of the index (and nothing else to filter): walk the HNSW
        # graph and filter its batches, which the server's own choice (a brute-force scan over the
        # filtered documents) does far slower there.
        self.policy = (
            " HYBRID_POLICY BATCHES"
            if op.namespace_prefix and not conds and _path_token("n", op.namespace_prefix) in broad
            else ""
        )
        self.need = op.offset + op.limit

    def _query(self) -> str:
        return (
            f"({' '.join(self.parts)})" if self.parts else "*"
        )  # "(*)" would make KNN a slow hybrid

    def call(self, window: int) -> Call:
        """The window's query: newest first, or the ``window`` nearest neighbours."""
        if self.qvec is None or self.spec is None:
            return self._search(self._query(), "u", "DESC", window)
        ef = f"{self.policy} EF_RUNTIME {max(self.ef, window)}" if self.spec.kind != "exact" else ""
        return self._search(f"{self._query()}=>[KNN {window} @e $B{ef} AS d]", "d", "ASC", window)

    def _search(self, query: str, sort: str, order: str, window: int) -> Call:
        ret: list[Any] = ["NOCONTENT"]
        params: list[Any] = []
        if self.qvec is not None and self.spec is not None:
            ret = ["RETURN", 1, "d"]
            params = [
                "PARAMS",
                2,
                "B",
                np.asarray(self.qvec, _vector_dtype(self.spec)[1]).tobytes(),
            ]
        # A KNN page whose conditions the server answered needs only its own rows (and ties).
        load = self.need if self.exact and params else 0
        return Call(
            (
                load,
                self.keys.index(self.spec if params else None),
                query,
                "SORTBY",
                sort,
                order,
                "LIMIT",
                0,
                window,
                *ret,
                *params,
                "DIALECT",
                2,
            ),
            script="search",
        )

    def records(self, reply: Any) -> tuple[int, float | None, list[Record]]:
        """How many rows the window held, the last one's distance, and the rows read back."""
        hits, last, rows = load_json(reply)
        out = []
        for meta, created, d in rows:
            r = Record.parse(meta, created)
            if d is not None and self.spec is not None:
                d = r.raw_distance = float(d)
                r.distance = {"cosine": d, "inner_product": d - 1.0, "l2": max(d, 0.0) ** 0.5}[
                    self.spec.distance
                ]
            out.append(r)
        return hits, None if last is None else float(last), out

    @staticmethod
    def _primary(r: Record) -> float:
        return r.raw_distance if r.raw_distance is not None else -r.updated

    def _ok(self, r: Record) -> bool:
        return _under(r.namespace, self.op.namespace_prefix) and matches(r.value, self.conds)

    def run(self, first_reply: Any, window: int) -> Plan:
        """Widen the window until ``offset + limit`` rows pass the client-side checks or none are left.

        It also widens while the page's last row ties (same updated_at: one batch; same distance:
        same text) with the window's last row, so the (namespace, key) tie-break is exact.
        """
        hits, last, rows = self.records(first_reply)
        while True:
            ok = rows if self.exact else [r for r in rows if self._ok(r)]
            edge = last if last is not None else self._primary(rows[-1]) if rows else None
            if hits < window or (len(ok) >= self.need and self._primary(ok[self.need - 1]) != edge):
                break
            window *= 4
            (reply,) = yield Round([self.call(window)])
            hits, last, rows = self.records(reply)
        primary = [r.distance if r.distance is not None else -r.updated for r in ok]
        if any(a >= b for a, b in pairwise(primary)):  # else already in page order
            ok.sort(key=lambda r: r.sort_key)
        return ok[self.op.offset : self.need]


def _total(reply: Any) -> int:
    """``total_results`` of an FT.SEARCH reply (a map under RESP3, a list under RESP2)."""
    if isinstance(reply, dict):
        return int(reply.get("total_results") or reply.get(b"total_results") or 0)
    return int(reply[0])


def _knn_settings(
    keys: Keys,
    spec: IndexSpec,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    stats: SearchStats,
) -> Generator[Request, Any, tuple[int, set[str]]]:
    """HNSW search breadth for the index's size, and the namespace prefixes (tokens) of this batch's
    KNN searches that hold at least half of the index."""
    tokens = {
        _path_token("n", op.namespace_prefix)
        for _, op, _ in searches
        if op.query and op.namespace_prefix
    }
    stale = sorted(t for t in tokens if stats.prefix(t).stale())
    calls = [Call(("FT.INFO", keys.index(spec)))] if stats.index.stale() else []
    calls += [
        Call(("FT.SEARCH", keys.index(spec), f"@p:{{{t}}}", "LIMIT", 0, 0, "DIALECT", 2))
        for t in stale
    ]
    if calls:
        replies = yield Round(calls)
        if len(replies) > len(stale):
            stats.index.update(_num_docs(replies[0]))
        for t, reply in zip(stale, replies[len(replies) - len(stale) :]):
            stats.prefix(t).update(_total(reply))
    total = stats.index.count or 0
    ef = int(spec.ann.get("ef_search", 0)) or search_breadth(total, EF_RUNTIME)
    return ef, {t for t in tokens if 2 * (stats.prefix(t).count or 0) >= max(total, 1)}


# --------------------------------------------------------------------------- the batch plan


def plan(
    keys: Keys,
    mode: Mode,
    spec: IndexSpec | None,
    ops: Iterable[Op],
    *,
    if_absent: bool = False,
    cluster: bool = False,
    stats: SearchStats | None = None,
) -> Plan:
    """Run a batch: validate everything, embed, read (pre-batch state), then write in one script call
    (on a cluster: register the namespaces, then one script call per namespace)."""
    op_list, batch = plan_batch(ops)
    results: list[Result] = [None] * len(op_list)
    now_us = time.time_ns() // 1000
    now_ms = now_us // 1000
    qvecs: dict[str, list[float]] = {}
    if spec is not None:
        queries = sorted({op.query for _, op, _ in batch.searches if op.query})
        if queries:
            embedded = yield Embed(queries, query=True)
            qvecs = dict(zip(queries, check_vectors(embedded, len(queries), spec.dims)))
    vectors = (yield from _embed_writes(keys, spec, batch.writes)) if spec is not None else {}
    ef, broad = 0, set[str]()
    if qvecs and spec is not None and mode == "query_engine" and spec.kind != "exact":
        ef, broad = yield from _knn_settings(keys, spec, batch.searches, stats or SearchStats())

    calls = [_get_call(keys, op.namespace, op.key) for _, op in batch.gets]
    need_registry = bool(batch.lists) or (mode == "plain" and bool(batch.searches))
    if need_registry:
        calls.append(Call(("ZRANGE", keys.registry, f"({now_ms}", "+inf", "BYSCORE")))
    searchers: list[tuple[int, _Searcher, int]] = []
    if mode == "query_engine":
        for i, op, conds in batch.searches:
            if op.limit == 0:
                results[i] = []
                continue
            s = _Searcher(keys, spec, op, conds, qvecs.get(op.query or ""), ef, broad)
            # Rows past the page show whether a tie crosses its edge; nearest-neighbour distances tie
            # more often, and a longer KNN window costs the server next to nothing.
            window = max(2 * s.need, 20) if s.qvec is not None else max(s.need + 1, 10)
            searchers.append((i, s, window))
            calls.append(s.call(window))
    replies = (yield Round(calls)) if calls else []

    touch: dict[tuple[str, str], float] = {}
    for (i, get), reply in zip(batch.gets, replies):
        rec = _get_record(reply)
        results[i] = rec.item() if rec else None
        if rec and get.refresh_ttl and rec.ttl is not None:
            touch[(nsp.join(rec.namespace), rec.key)] = rec.ttl
    pos = len(batch.gets)
    live = _live_namespaces(replies[pos]) if need_registry else []
    listed = live
    if cluster and batch.lists:  # registry entries may outlive their items there: check the ZSETs
        listed = [
            ns
            for ns in live
            if any(nsp.matches_all(ns, op.match_conditions) for _, op in batch.lists)
        ]
        counts = yield Round(
            [Call(("ZCOUNT", keys.zset(nsp.join(ns)), f"({now_ms}", "+inf")) for ns in listed]
        )
        listed = [ns for ns, n in zip(listed, counts) if n]
    for i, list_op in batch.lists:
        results[i] = _list_result(list_op, listed)
    found: list[tuple[int, SearchOp, list[Record]]] = []
    for (i, s, window), reply in zip(searchers, replies[pos + need_registry :]):
        found.append((i, s.op, (yield from s.run(reply, window))))
    if mode == "plain" and batch.searches:
        found += yield from _plain_searches(keys, spec, batch.searches, live, qvecs, now_ms)
    for i, op, records in found:
        results[i] = [r.search_item(spec) for r in records]
        if op.refresh_ttl:
            touch.update(
                {(nsp.join(r.namespace), r.key): r.ttl for r in records if r.ttl is not None}
            )

    op_code = "a" if if_absent else "p"
    named = [(nsp.join(w.namespace), w) for w in batch.writes]
    entries = [
        _put_entry(mode, ns_text, w, now_us, vectors.get((ns_text, w.key), []), op_code)
        if w.value is not None
        else _Entry(ns_text, w.key, "d", NO_EXPIRY, ("d",))
        for ns_text, w in named
    ]
    written_keys = {(ns_text, w.key) for ns_text, w in named}
    entries += [
        _touch_entry(ns_text, key, ttl, now_ms)
        for (ns_text, key), ttl in touch.items()
        if (ns_text, key) not in written_keys
    ]
    if entries:
        for request in _write_rounds(keys, mode, now_us, entries, cluster):
            written = yield request
        if if_absent:
            return bool(sum(written))
    return results


def _plain_searches(
    keys: Keys,
    spec: IndexSpec | None,
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]],
    live: list[tuple[str, ...]],
    qvecs: dict[str, list[float]],
    now_ms: int,
) -> Generator[Request, Any, list[tuple[int, SearchOp, list[Record]]]]:
    """Plain mode: read every live item of the matching namespaces, filter and score with numpy."""
    wanted = sorted({ns for _, op, _ in searches for ns in live if _under(ns, op.namespace_prefix)})
    with_vectors = spec is not None and bool(qvecs)
    flag = "1" if with_vectors else "0"
    replies = (
        (
            yield Round(
                [
                    Call((now_ms, flag), script="read_ns", keys=(keys.zset(nsp.join(ns)),))
                    for ns in wanted
                ]
            )
        )
        if wanted
        else []
    )
    by_ns: dict[tuple[str, ...], list[Record]] = {}
    for ns, reply in zip(wanted, replies):
        recs = by_ns[ns] = []
        for row in load_json(reply):
            rec = Record.parse(row[0], row[1])
            if with_vectors and spec is not None:
                rec.vectors = _decode_vectors(row[2], spec)
            recs.append(rec)
    out = []
    for i, op, conds in searches:
        records = [
            Record(r.namespace, r.key, r.value, r.created, r.updated, r.ttl, vectors=r.vectors)
            for ns in wanted
            if _under(ns, op.namespace_prefix)
            for r in by_ns[ns]
            if matches(r.value, conds)
        ]
        qvec = qvecs.get(op.query or "")
        if qvec is not None and spec is not None:
            records = _score_plain(spec, records, qvec)
        records.sort(key=lambda r: r.sort_key)
        out.append((i, op, records[op.offset : op.offset + op.limit]))
    return out


def sweep_plan(keys: Keys) -> Plan:
    """Drop expired entries from the namespace ZSETs and the registry; items expire natively."""
    now_ms = time.time_ns() // 1_000_000
    (names,) = yield Round([Call(("ZRANGE", keys.registry, 0, -1))])
    calls = [Call(("ZREMRANGEBYSCORE", keys.zset(_s(n)), "-inf", now_ms)) for n in names]
    calls.append(Call(("ZREMRANGEBYSCORE", keys.registry, "-inf", now_ms)))
    removed = yield Round(calls)
    return sum(int(r) for r in removed[:-1])
