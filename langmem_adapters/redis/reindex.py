"""``reindex`` on Redis (single server): every item's new vectors written to a shadow hash beside it
(``P:r:...``) while searches keep reading the item's own, then one script call switching them all.

The position, the target identity and fields are kept in ``P:reindex``, and every new vector by its
text hash in ``P:reindex:t``, so a rerun with the same embedder and fields resumes where the last
stopped, and unchanged text is embedded once, within and across pages and runs. A shadow records
the SHA1 of the item meta it was made from; the switch script (``lua/reindex_switch.lua``) changes
nothing while any live item is newer than its shadow (or has none): those are re-embedded and the
switch runs again. In Query Engine mode a new vector size gets its index before the switch and the
old index goes after it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Generator
from typing import Any, cast

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import ItemTexts, embed_missing
from langmem_adapters.core.identity import Identity
from langmem_adapters.core.records import Cursor
from langmem_adapters.core.vectors import IndexSpec, extract_texts, text_hash
from langmem_adapters.errors import InvalidArgumentError, StoreError
from langmem_adapters.redis.export import items_plan
from langmem_adapters.redis.identity import recorded_json
from langmem_adapters.redis.layout import Keys, Mode, text
from langmem_adapters.redis.namespaces import count_plan
from langmem_adapters.redis.records import Record, decode_vectors, encode_vectors
from langmem_adapters.redis.schema import index_command
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.tokens import value_tokens
from langmem_adapters.redis.writes import lexical_text, vector_doc, vector_fields

__all__ = ["RedisReindex"]

#: How long a shadow outlives an abandoned reindex (its item deleted meanwhile, a run never resumed).
SHADOW_TTL_S = 7 * 24 * 3600
#: Catch-up rounds before the switch gives up on items that keep changing.
SWITCH_ATTEMPTS = 20


class RedisReindex:
    """The plans of one reindex of a Redis store (a :class:`~langmem_adapters.core.reindex.ReindexJob`)."""

    def __init__(
        self,
        keys: Keys,
        ready: Callable[[], Generator[Round, Any, Mode]],
        source: IndexSpec,
        target: IndexSpec,
        identity: Identity,
        switched: Callable[[IndexSpec, Identity], None],
        cluster: bool,
    ) -> None:
        """``ready``: the store's mode (set up first if it was not); ``switched`` makes the store use
        the new index and identity."""
        if cluster:
            raise InvalidArgumentError(
                "reindex needs a single Redis server: on a Redis Cluster one script cannot switch "
                "every namespace at once; export the items and import them into a store with the new "
                "embedder instead"
            )
        self.keys, self.source, self.target = keys, source, target
        self._ready, self.mode = ready, cast(Mode, "plain")  # the store's mode, learnt by ``start``
        self.identity, self._switched = identity, switched
        self.done = self.total = 0
        self.after: Cursor = ("", "")

    def start(self) -> Steps:
        """Resume the reindex recorded for the same identity and fields, or start anew."""
        k = self.keys
        (state,) = yield Round([Call(("HGETALL", k.reindexing))])
        pairs = state.items() if isinstance(state, dict) else zip(state[::2], state[1::2])
        got = {text(a): text(b) for a, b in pairs}
        fields = json.dumps(list(self.target.fields))
        self.mode = yield from self._ready()
        self.total = yield from count_plan(k, self.mode, (), ())
        same = got and got.get("fields") == fields
        if same and Identity.from_json(got["identity"]).same_model(self.identity):
            self.after = (got["after_ns"], got["after_key"])
            self.done = int(got["done"])
            return self.done, self.total
        started = _hset(k.reindexing, {"identity": self.identity.to_json(), "fields": fields})
        yield Round([Call(("DEL", k.reindexing, k.reindexed_texts)), started, self._position()])
        return 0, self.total

    def page(self, limit: int) -> Steps:
        """Re-embed the next ``limit`` items into their shadows and record the position; ``None``
        when every item was."""
        items, _ = yield from items_plan(self.keys, (), self.after, limit)
        if not items:
            return None
        yield from self._shadow([(nsp.join(i.namespace), i.key) for i in items])
        self.after = items[-1].cursor
        self.done += len(items)
        yield Round([self._position()])
        return self.done, max(self.total, self.done)

    def _position(self) -> Call:
        """Record how far the reindex got, where a rerun resumes."""
        after_ns, after_key = self.after
        position = {"after_ns": after_ns, "after_key": after_key, "done": self.done}
        return _hset(self.keys.reindexing, position)

    def _shadow(self, wanted_keys: list[tuple[str, str]]) -> Steps:
        """Write the shadows of these items ``(namespace text, key)`` from their current meta: new
        text embedded with the new model, text embedded before reused."""
        k, spec = self.keys, self.target
        metas = yield Round([Call(("HGET", k.item(ns, key), "m")) for ns, key in wanted_keys])
        records: list[tuple[str, str, bytes, Record]] = []
        for (ns, key), raw in zip(wanted_keys, metas):
            if raw is not None:
                blob = raw if isinstance(raw, bytes) else str(raw).encode()
                records.append((ns, key, blob, Record.parse(blob, 0)))
        wanted: ItemTexts = {
            (ns, key): [(f, text_hash(x), x) for f, x in extract_texts(r.value, spec.fields)]
            for ns, key, _, r in records
        }
        hashes = sorted({h for texts in wanted.values() for _, h, _ in texts})
        known: dict[str, list[float]] = {}
        if hashes:
            (found,) = yield Round([Call(("HMGET", k.reindexed_texts, *hashes))])
            for h, b64 in zip(hashes, found):
                if b64 is not None:
                    known[h] = decode_vectors(b64, spec)[0].tolist()
        vectors = yield from embed_missing(spec, wanted, known, list, spec.embeddings)
        calls: list[Call] = []
        fresh = {h: v for rows in vectors.values() for _, h, v in rows if h not in known}
        if fresh:
            calls.append(
                _hset(k.reindexed_texts, {h: encode_vectors([v]) for h, v in fresh.items()})
            )
        for ns, key, blob, r in records:
            rows = vectors[(ns, key)]
            hashes_json, e = vector_fields(rows)
            doc = ""
            if self.mode == "query_engine" and rows:
                doc = vector_doc(r.namespace, value_tokens(r.value), rows)
            cells = {"s": hashlib.sha1(blob).hexdigest(), "h": hashes_json, "e": e, "d": doc}
            # a hybrid store's words follow the new fields (the switch sets them with the vectors)
            words = lexical_text(spec, r.value, None)
            if words is not None:
                cells["w"] = words
            shadow = k.shadow(ns, key)
            calls += [_hset(shadow, cells), Call(("EXPIRE", shadow, SHADOW_TTL_S))]
        yield Round(calls)

    def finish(self) -> list[Callable[[], Steps]]:
        """The switch; then the old vector index dropped (Query Engine mode, a new size)."""
        return [self._switch, self._drop_old]

    def _switch(self) -> Steps:
        """Run the switch script until no item is newer than its shadow (each time re-embedding
        those that are), after creating the new size's index."""
        k, new_index = self.keys, self.keys.index(self.target)
        if self.mode == "query_engine" and new_index != k.index(self.source):
            (created,) = yield Round([Call(index_command(k, self.target, True))], check=False)
            if isinstance(created, Exception) and "already exists" not in str(created):
                raise created
        for _ in range(SWITCH_ATTEMPTS):
            now_ms = time.time_ns() // 1_000_000
            (names,) = yield Round([Call(("ZRANGE", k.registry, f"({now_ms}", "+inf", "BYSCORE"))])
            spaces = [text(n) for n in names]
            qe = "1" if self.mode == "query_engine" else "0"
            args = (now_ms, qe, new_index, recorded_json(self.identity, 0), *spaces)
            zsets = [k.zset(ns) for ns in spaces]
            touched = (k.registry, k.embedders, k.reindexing, k.reindexed_texts, *zsets)
            (reply,) = yield Round([Call(args, "reindex_switch", touched)])
            verdict, *rest = [text(x) if isinstance(x, bytes) else x for x in reply]
            if verdict == "ok":
                return None
            if verdict == "stale":
                start = len(k.prefix) + 3  # "P:i:"
                yield from self._shadow([_split_item_key(key[start:]) for key in rest])
        raise StoreError(
            f"reindex could not switch: items kept changing through {SWITCH_ATTEMPTS} catch-ups; "
            "run it again when writes are quieter (it resumes)"
        )

    def _drop_old(self) -> Steps:
        """Drop the old vector index when the switch moved to another (its documents stay)."""
        old, new = self.keys.index(self.source), self.keys.index(self.target)
        if self.mode == "query_engine" and old != new:
            yield Round([Call(("FT.DROPINDEX", old))], check=False)

    def switch(self) -> None:
        """The store takes on the new index and identity."""
        self._switched(self.target, self.identity)


def _hset(key: str, fields: dict[str, Any]) -> Call:
    """``HSET`` of ``fields`` into the hash ``key``."""
    return Call(("HSET", key, *(x for pair in fields.items() for x in pair)))


def _split_item_key(rest: str) -> tuple[str, str]:
    """``(namespace text, key)`` of an item key after ``P:i:`` (``{tag}:<len>:<ns>:<key>``)."""
    after_tag = rest[rest.index("}:") + 2 :]
    length, tail = after_tag.split(":", 1)
    n = int(length)
    return tail[:n], tail[n + 1 :]
