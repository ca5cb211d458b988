"""The writes of a Redis batch: one entry per put, delete, TTL refresh or restored item, sent as
write-script calls (see ``lua/write.lua``).

On a single server all writes of a batch, with their bookkeeping, run in one Lua script call, so the
batch is atomic and the registry exact. On a Redis Cluster (``cluster=True``) a script call may only
touch one slot: the batch's namespaces are first registered in ``P:ns`` (scores only grow, so an
entry covers every live item of its namespace), then each namespace's writes run in their own script
call, atomic per namespace. Registry entries may then outlive their items (deletes, failed writes):
readers check each candidate's ZSET for a live item.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from json.encoder import encode_basestring
from typing import Any

import orjson

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.embedding import Embed, embed_missing, texts_to_embed
from langmem_adapters.core.hybrid import words
from langmem_adapters.core.ops import Write
from langmem_adapters.core.records import StoredItem
from langmem_adapters.core.values import load_json
from langmem_adapters.core.vectors import IndexSpec, extract_texts
from langmem_adapters.redis.layout import EPOCH, GRACE_MS, NO_EXPIRY, Keys, Mode, text
from langmem_adapters.redis.records import decode_vectors, encode_vectors
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.tokens import namespace_tags, namespace_tokens, path_json, value_tokens

__all__ = [
    "Entry",
    "Vectors",
    "delete_entry",
    "embed_writes",
    "lexical_text",
    "put_entry",
    "restore_entry",
    "sweep_plan",
    "touch_entry",
    "vector_doc",
    "vector_fields",
    "write_rounds",
]

Vectors = list[tuple[str, str, list[float]]]
"""An item's ``(field, text hash, vector)`` triples."""


@dataclass(slots=True)
class Entry:
    """One item of the write script: its op code, expiry and script arguments (see write.lua)."""

    ns_text: str
    key: str
    op: str
    x: int
    args: tuple[Any, ...]


def write_rounds(
    keys: Keys, mode: Mode, now_us: int, entries: list[Entry], cluster: bool
) -> list[Round]:
    """One write-script call for all entries; on a cluster, a registry step then one call per namespace."""
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        groups.setdefault(e.ns_text, []).append(e)
    if not cluster:
        return [Round([_script_call(keys, mode, now_us, groups, registry=True)])]
    expiry = {
        ns: max(e.x for e in group)
        for ns, group in groups.items()
        if any(e.op != "d" for e in group)
    }
    pairs = [v for ns, x in expiry.items() for v in (x, ns)]  # latest expiry, namespace, ...
    register = Call((now_us // 1000 - GRACE_MS, *pairs), "register", (keys.registry,))
    one_each = [{ns: group} for ns, group in groups.items()]
    writes = Round([_script_call(keys, mode, now_us, g, registry=False) for g in one_each])
    return [Round([register]), writes] if expiry else [writes]


def _script_call(
    keys: Keys, mode: Mode, now_us: int, groups: dict[str, list[Entry]], registry: bool
) -> Call:
    key_list = [keys.registry] if registry else []
    qe = "1" if mode == "query_engine" else "0"
    args: list[Any] = [now_us // 1000 - GRACE_MS, qe, len(groups), "1" if registry else "0", now_us]
    for ns_text, group in groups.items():
        key_list.append(keys.zset(ns_text))
        args += (ns_text, len(group))
        for e in group:
            key_list.append(keys.item(ns_text, e.key))
            args += e.args
    return Call(tuple(args), script="write", keys=tuple(key_list))


def _ttl_ms(minutes: float) -> int:
    return max(1, round(minutes * 60_000))


def touch_entry(ns_text: str, key: str, ttl: float, now_ms: int) -> Entry:
    """A TTL refresh: the item's own TTL, from now."""
    ttl_ms = _ttl_ms(ttl)
    return Entry(ns_text, key, "t", now_ms + ttl_ms, ("t", str(ttl_ms), now_ms + ttl_ms))


def delete_entry(ns_text: str, key: str) -> Entry:
    """A delete of the item and its bookkeeping."""
    return Entry(ns_text, key, "d", NO_EXPIRY, ("d",))


def put_entry(
    mode: Mode,
    ns_text: str,
    w: Write,
    now_us: int,
    vectors: Vectors,
    op: str,
    words: str | None = None,
) -> Entry:
    """A put (``op`` ``p``) or put-if-absent (``a``) written now, expiring after its TTL; ``words``:
    a hybrid store's indexed text (see :func:`lexical_text`)."""
    ttl_ms = _ttl_ms(w.ttl) if w.ttl is not None else None
    x = now_us // 1000 + ttl_ms if ttl_ms is not None else NO_EXPIRY
    head = (_code(op, vectors, words), "" if ttl_ms is None else str(ttl_ms), x)
    assert w.value is not None and w.value_json is not None
    args = _item_args(mode, w.namespace, w.key, w.value, w.value_json, now_us, w.ttl, vectors)
    return Entry(ns_text, w.key, head[0], x, head + args + _words(words))


def _code(op: str, vectors: Vectors, words: str | None) -> str:
    """The write script's op code: upper case with vectors, a ``w`` after it with a hybrid text."""
    return (op.upper() if vectors else op) + ("" if words is None else "w")


def _words(words: str | None) -> tuple[str, ...]:
    return () if words is None else (words,)


def lexical_text(spec: IndexSpec | None, value: Mapping[str, Any], index: Any) -> str | None:
    """What a hybrid store keeps of an item for its lexical side: the words (``core.hybrid.words``)
    of the texts it is embedded from (its own ``index`` fields, else the index's; none for
    ``index=False``), space-separated; ``None`` for a store without hybrid search, which stores none."""
    if spec is None or spec.hybrid is None:
        return None
    fields = spec.fields if index is None else (index or ())
    return " ".join(w for _, t in extract_texts(value, fields) for w in words(t))


def _us(at: datetime) -> int:
    return (at - EPOCH) // timedelta(microseconds=1)


def restore_entry(
    mode: Mode, record: StoredItem, value_json: str, vectors: Vectors, words: str | None = None
) -> Entry:
    """A restored item (``op`` ``r``): written with its own created_at, updated_at and expiry."""
    expires = record.expires_at
    x = NO_EXPIRY if expires is None else (expires - EPOCH) // timedelta(milliseconds=1)
    updated = _us(record.updated_at)
    head = (_code("r", vectors, words), _us(record.created_at), updated, x)
    ns, key, ttl = record.namespace, record.key, record.ttl_minutes
    args = _item_args(mode, ns, key, record.value, value_json, updated, ttl, vectors)
    return Entry(nsp.join(ns), key, head[0], x, head + args + _words(words))


def _item_args(
    mode: Mode,
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any],
    value_json: str,
    updated_us: int,
    ttl: float | None,
    vectors: Vectors,
) -> tuple[Any, ...]:
    """What the write script stores of an item after its op's head: meta, vectors, tokens."""
    meta = (
        f'{{"ns":{path_json(namespace)},"k":{encode_basestring(key)},'
        f'"v":{value_json},"u":{updated_us},"l":{"null" if ttl is None else repr(ttl)}}}'
    )
    args: tuple[Any, ...] = (meta,)
    if vectors:
        args += vector_fields(vectors)
    if mode == "query_engine":
        t = value_tokens(value)  # distinct: one x and one e token per path
        args += (namespace_tags(namespace), ",".join(t))
        if vectors:
            args += (vector_doc(namespace, t, vectors),)
    return args


def vector_fields(vectors: Vectors) -> tuple[str, str]:
    """An item's ``h`` (its texts' hashes, JSON) and ``e`` (its vectors, base64 float32) fields."""
    hashes = orjson.dumps([[f, h] for f, h, _ in vectors]).decode()
    return hashes, encode_vectors([v for _, _, v in vectors])


def vector_doc(namespace: tuple[str, ...], tokens: list[str], vectors: Vectors) -> str:
    """An item's vector document (Query Engine mode): its vectors, and its namespace's and value's
    tokens for a filtered KNN."""
    doc = {"p": namespace_tokens(namespace), "t": tokens, "e": [v for _, _, v in vectors]}
    return orjson.dumps(doc).decode()


def embed_writes(
    keys: Keys, spec: IndexSpec, writes: Iterable[Write]
) -> Generator[Embed | Round, Any, dict[tuple[str, str], Vectors]]:
    """Vectors for each put, reusing stored embeddings of unchanged text (one HMGET each of the
    items that index any text); only new text is embedded."""
    wanted = texts_to_embed(spec, writes)
    todo = [k for k, rows in wanted.items() if rows]
    known: dict[str, list[float]] = {}
    if todo:
        replies = yield Round([Call(("HMGET", keys.item(*k), "h", "e")) for k in todo])
        for h_raw, e_raw in replies:
            if h_raw is None:
                continue
            hashes = load_json(h_raw)
            for (_, h), vec in zip(hashes, decode_vectors(e_raw, spec)):
                known[h] = vec.tolist()
    return (yield from embed_missing(spec, wanted, known, list))  # lists of floats, as embedded


def sweep_plan(keys: Keys) -> Generator[Round, list[Any], int]:
    """Drop expired entries from the namespace ZSETs and the registry; items expire natively."""
    now_ms = time.time_ns() // 1_000_000
    (names,) = yield Round([Call(("ZRANGE", keys.registry, 0, -1))])
    calls = [Call(("ZREMRANGEBYSCORE", keys.zset(text(n)), "-inf", now_ms)) for n in names]
    calls.append(Call(("ZREMRANGEBYSCORE", keys.registry, "-inf", now_ms)))
    removed = yield Round(calls)
    return sum(int(r) for r in removed[:-1])
