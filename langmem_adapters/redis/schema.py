"""Setting up a Redis store: mode detection (Query Engine or plain Redis) and index creation."""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any, cast

from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError, UnsupportedServerError
from langmem_adapters.redis.layout import Keys, Mode, text, vector_dtype
from langmem_adapters.redis.scripts import Call, Round

__all__ = [
    "EXACT_TWIN",
    "MODES",
    "check_mode",
    "has_attribute",
    "index_command",
    "info_field",
    "num_docs",
    "setup_plan",
]

MODES = ("auto", "query_engine", "plain")

#: The items index's field of a hybrid store's words (see ``redis/lexical.py``): no stemming, so an
#: identifier matches exactly and any language alike.
TEXT_FIELD = ("w", "TEXT", "NOSTEM")
#: The items index's indexed copy of ``u`` (updated_at), through which the search script reads only
#: the newest matches (``redis/search.py``): ``u`` itself is sortable but not indexed, as it was
#: once only sorted by, and an attribute's indexing cannot be changed in place.
SORTED_FIELD = ("u", "AS", "o", "NUMERIC")
#: An HNSW vector index's exact twin: the same vectors (``$.e[*]``) as a FLAT field, which exact
#: searches (small namespaces, an index within the exact line) scan in contiguous blocks: 3-6x less
#: server time than ``HYBRID_POLICY ADHOC_BF`` over the HNSW field, which fetches each document's
#: vectors by label (10,000 standard-normal 256-d vectors: 0.6 ms against 1.4-3.8 ms, and
#: ``EF_RUNTIME`` 913 1.7-1.8 ms; LongMemEval's 540-round namespaces 0.06 against 0.09 ms; both on
#: a shared 2-core machine, docs/benchmarks.md). It costs the FLAT copy of each vector. Made with
#: a new index only: an index made before has none (``redis/search.py`` reads which from FT.INFO).
EXACT_TWIN = "f"


def check_mode(mode: Any) -> None:
    """Reject a ``mode`` option other than ``auto``, ``query_engine`` or ``plain``."""
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be 'auto', 'query_engine' or 'plain', got {mode!r}")


def setup_plan(
    keys: Keys, spec: IndexSpec | None, mode: str, cluster: bool = False
) -> Generator[Round, list[Any], Mode]:
    """Choose the mode (``auto``: the Query Engine when FT.* and JSON.* exist) and create the index.

    The first store on a prefix records its mode, so stores sharing a prefix agree on the layout.
    On a cluster ``auto`` means plain mode: an index covers one shard only without the coordinator.
    ``mode`` was checked by the store (:func:`check_mode`).
    """
    probes = [] if cluster else [Call(("FT._LIST",)), Call(("JSON.TYPE", f"{keys.prefix}:probe"))]
    info, recorded, *probed = yield Round(
        [Call(("INFO", "server")), Call(("GET", keys.mode)), *probes], check=False
    )
    version = _version(info)
    if tuple(int(x) for x in re.findall(r"\d+", version)[:2]) < (6, 2):
        raise UnsupportedServerError(
            f"the Redis store needs Redis >= 6.2 or Valkey, found {version}"
        )
    has_qe = bool(probed) and not any(isinstance(r, Exception) for r in probed)
    recorded = text(recorded)
    chosen = cast(Mode, mode)
    if mode == "auto":
        chosen = recorded or ("query_engine" if has_qe else "plain")
    if recorded and chosen != recorded:
        raise InvalidArgumentError(
            f"prefix {keys.prefix!r} already holds a {recorded!r} store, not {chosen!r}"
        )
    if chosen == "query_engine":
        if not has_qe:
            raise UnsupportedServerError(
                "mode='query_engine' needs a single Redis server with the Query Engine and JSON (Redis 8 or "
                "Redis Stack); on a Redis Cluster use mode='plain' (or 'auto')"
            )
        if recorded and any(text(n).startswith(f"{keys.prefix}:idx") for n in probed[0]):
            raise InvalidArgumentError(
                f"prefix {keys.prefix!r} holds items in the JSON layout of earlier development builds; "
                "export them with that build (`langmem-adapters export`) and import them into a new prefix"
            )
        # A new prefix holds no keys yet: its indexes skip the scan of the whole keyspace, which on a
        # busy server would slow every command until it finished.
        fresh = not recorded
        calls = [Call(index_command(keys, None, fresh))]
        calls += [Call(index_command(keys, spec, fresh))] if spec is not None else []
        if spec is not None and spec.hybrid is not None:  # an index made before gets the field
            calls.append(Call(("FT.ALTER", keys.index(None), "SCHEMA", "ADD", *TEXT_FIELD)))
        if recorded:  # an items index made before gets ``o`` (scanned in the background)
            calls.append(Call(("FT.ALTER", keys.index(None), "SCHEMA", "ADD", *SORTED_FIELD)))
        for created in (yield Round(calls, check=False)):
            if isinstance(created, Exception) and not _exists(created):
                raise created
    yield Round([Call(("SET", keys.mode, chosen, "NX"))])
    return chosen


def _exists(error: Exception) -> bool:
    """Whether a failed FT.CREATE / FT.ALTER only found its index or field already there."""
    return "already exists" in str(error) or "Duplicate field" in str(error)


def _version(info: Any) -> str:
    """The server's version in an INFO reply (parsed by redis-py's pipeline, or the raw text our
    wire reads), "0" when absent."""
    if isinstance(info, dict):
        return text(info.get("redis_version", "0"))
    raw = text(info) if isinstance(info, (str, bytes)) else ""
    found = re.search(r"^redis_version:(\S+)", raw, re.M)
    return found.group(1) if found else "0"


def index_command(keys: Keys, spec: IndexSpec | None, fresh: bool = False) -> tuple[Any, ...]:
    """``FT.CREATE`` of the items' index (hashes, ``spec`` None) or of a vector index (documents);
    ``fresh``: skip the initial scan, as the prefix has no keys yet (or, for a ``reindex`` to a new
    size, its documents still hold the old size)."""
    if spec is None:
        schema: list[Any] = ["p", "TAG", "SEPARATOR", ",", "t", "TAG", "SEPARATOR", ","]
        schema += ["u", "NUMERIC", "SORTABLE", "NOINDEX", *SORTED_FIELD]
        schema += [*TEXT_FIELD]  # a hybrid store's words; absent from other stores' items
        on, prefix = "HASH", f"{keys.prefix}:i:"
    else:
        metric = {"cosine": "COSINE", "l2": "L2", "inner_product": "IP"}[spec.distance]
        attrs: list[Any] = ["TYPE", vector_dtype(spec)[0], "DIM", spec.dims]
        attrs += ["DISTANCE_METRIC", metric]
        if spec.kind == "exact":
            algo = "FLAT"
        else:
            algo = "HNSW"
            attrs += ["M", int(spec.ann.get("m", 16))]
            attrs += ["EF_CONSTRUCTION", int(spec.ann.get("ef_construction", 64))]
        schema = ["$.p[*]", "AS", "p", "TAG", "$.t[*]", "AS", "t", "TAG"]
        schema += ["$.e[*]", "AS", "e", "VECTOR", algo, len(attrs), *attrs]
        if algo == "HNSW":
            schema += ["$.e[*]", "AS", EXACT_TWIN, "VECTOR", "FLAT", 6, *attrs[:6]]
        on, prefix = "JSON", keys.vector_docs
    scan = ("SKIPINITIALSCAN",) if fresh else ()
    # No stop words: the lexical side of a hybrid search matches "a" or "the" like any word.
    words = ("STOPWORDS", 0) if spec is None else ()
    head = ("FT.CREATE", keys.index(spec), "ON", on, "PREFIX", 1, prefix, *scan, *words)
    return (*head, "SCHEMA", *schema)


def info_field(info: Any, name: str) -> Any:
    """A field of an ``FT.INFO`` reply (a map under RESP3, a flat field/value list under RESP2)."""
    if not isinstance(info, dict):
        info = dict(zip(info[::2], info[1::2]))
    return info.get(name, info.get(name.encode()))


def num_docs(info: Any) -> int:
    """``num_docs`` of an ``FT.INFO`` reply."""
    return int(float(text(info_field(info, "num_docs") or 0)))


def has_attribute(info: Any, name: str) -> bool:
    """Whether an ``FT.INFO`` reply lists the attribute ``name`` (the indexed timestamp ``o``, the
    exact twin :data:`EXACT_TWIN`): indexes made before either was added lack it."""
    return any(
        text(info_field(a, "attribute")) == name for a in info_field(info, "attributes") or []
    )
