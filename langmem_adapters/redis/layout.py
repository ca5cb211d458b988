"""The key layout of a Redis store, and the encodings its keys and fields share.

For a store with prefix ``P`` (``{h}`` is a hash tag derived from the namespace, so all keys of one
namespace live in one cluster slot):

- ``P:i:{h}:<len(ns)>:<ns>:<key>``: an item, a HASH: ``m`` the item's JSON text (``ns``, ``k``,
  ``v`` the value, ``u`` updated_at µs, ``l`` TTL minutes), ``c`` created_at µs, ``x`` expiry ms,
  ``h`` embedded-text hashes, ``e`` the vectors (base64 float32), ``w`` a hybrid store's words of
  the indexed texts (``redis/lexical.py``). Query Engine mode adds what the index ``P:items`` reads:
  ``u`` updated_at, ``p`` namespace tokens, ``t`` value tokens (and ``w`` as TEXT).
- ``P:v:{h}:<len(ns)>:<ns>:<key>``: Query Engine mode, an item with vectors: a JSON document with
  its vectors and the item's ``p`` and ``t`` (for filtered KNN), indexed by the vector index
  (``P:vec:...``). A hash holds one vector per field; a JSON array holds every vector of the item.
- ``P:z:{h}:<ns>``: ZSET of the namespace's item keys scored by expiry (ms, ``NO_EXPIRY`` if none).
- ``P:ns``: ZSET of namespaces scored by the latest expiry of their items (the namespace registry).
- ``P:mode``: the mode the first store on the prefix chose.
- ``P:r:{h}:<len(ns)>:<ns>:<key>``, ``P:reindex``, ``P:reindex:t``: a ``reindex`` in progress (an
  item's new vectors, the position, the new vectors by text hash).
- ``P:embedders``: HASH, per vector index name the JSON of its embedder identity and generation.
- ``P:calibration``: HASH, per vector index name the JSON of its last recall calibration (read by
  new store instances).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from langmem_adapters.core.vectors import IndexSpec, text_hash
from langmem_adapters.errors import InvalidArgumentError

__all__ = [
    "EPOCH",
    "GRACE_MS",
    "NO_EXPIRY",
    "Keys",
    "Mode",
    "datetime_of",
    "text",
    "under",
    "vector_dtype",
]

Mode = Literal["query_engine", "plain"]
NO_EXPIRY = 9_000_000_000_000_000  # ms: "never" as a finite ZSET score
GRACE_MS = 3_600_000  # how long index entries of expired items stay for sweep_ttl() to count
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_PREFIX = re.compile(r"[A-Za-z0-9_\-]+")


# Cached: every key name of an item holds it; a batch of 100 puts costs 1.12x the client CPU
# without the cache, a put 1.03-1.05x (docs/architecture.md).
@lru_cache(maxsize=8192)
def _tag(ns_text: str) -> str:
    return text_hash(ns_text)[:16]


@dataclass(frozen=True)
class Keys:
    """Key names of one store; ``prefix`` lets several stores share one Redis."""

    prefix: str

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise InvalidArgumentError(
                f"prefix must be non-empty ASCII letters, digits, '_' or '-', got {self.prefix!r}"
            )

    def item(self, ns_text: str, key: str) -> str:
        """The item's hash."""
        return f"{self.prefix}:i:{{{_tag(ns_text)}}}:{len(ns_text)}:{ns_text}:{key}"

    def item_id(self, name: str) -> tuple[str, str]:
        """The ``(namespace text, key)`` of an item hash's name (the inverse of :meth:`item`)."""
        length, _, rest = name[len(self.prefix) + 4 :].split("}:", 1)[1].partition(":")
        return rest[: int(length)], rest[int(length) + 1 :]

    def vectors(self, ns_text: str, key: str) -> str:
        """The item's vector document (Query Engine mode; the write script derives the same name)."""
        return f"{self.vector_docs}{{{_tag(ns_text)}}}:{len(ns_text)}:{ns_text}:{key}"

    @property
    def vector_docs(self) -> str:
        """The prefix of the vector documents' names (the vector indexes' ``PREFIX``)."""
        return f"{self.prefix}:v:"

    def shadow(self, ns_text: str, key: str) -> str:
        """The item's vectors made by a ``reindex`` in progress (the switch script derives the same name)."""
        return f"{self.prefix}:r:{{{_tag(ns_text)}}}:{len(ns_text)}:{ns_text}:{key}"

    @property
    def reindexing(self) -> str:
        """The HASH of a ``reindex`` in progress: its target identity, fields and position."""
        return f"{self.prefix}:reindex"

    @property
    def reindexed_texts(self) -> str:
        """The HASH of a ``reindex`` in progress: text hash -> its new vector (embedded once)."""
        return f"{self.prefix}:reindex:t"

    def zset(self, ns_text: str) -> str:
        """The namespace's ZSET of item keys by expiry."""
        return f"{self.prefix}:z:{{{_tag(ns_text)}}}:{ns_text}"

    @property
    def registry(self) -> str:
        """The ZSET of namespaces by the latest expiry of their items."""
        return f"{self.prefix}:ns"

    @property
    def embedders(self) -> str:
        """The HASH of embedder identities: per vector index name, its identity and generation."""
        return f"{self.prefix}:embedders"

    @property
    def calibration(self) -> str:
        """The HASH of recall calibrations: per vector index name, the last measurement's JSON."""
        return f"{self.prefix}:calibration"

    @property
    def mode(self) -> str:
        """Where the prefix's mode is recorded."""
        return f"{self.prefix}:mode"

    def index(self, spec: IndexSpec | None) -> str:
        """The items' index (``None``), or the vector index of an embedding shape: one per shape, so
        stores with other embedders can share a prefix."""
        if spec is None:
            return f"{self.prefix}:items"
        return f"{self.prefix}:vec:{spec.kind}:{spec.distance}:{spec.vector_type}{spec.dims}"


def text(v: Any) -> Any:
    """A reply as text: bytes decoded, anything else as it is (clients may decode already)."""
    return v.decode() if isinstance(v, bytes) else v


# Cached (items written by one batch share their timestamps): alone it saves 3-4% of a get's client
# CPU, but without it and the session class both, a get costs 1.08-1.10x (docs/architecture.md).
@lru_cache(maxsize=4096)
def datetime_of(us: int) -> datetime:
    """A stored timestamp (µs since the epoch) as an aware UTC datetime."""
    return EPOCH + timedelta(microseconds=us)


def under(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    """Whether ``namespace`` lies under ``prefix`` (whole labels)."""
    return namespace[: len(prefix)] == prefix


def vector_dtype(spec: IndexSpec) -> tuple[str, type[np.floating[Any]]]:
    """The Query Engine type and numpy type of the index's vectors."""
    return ("FLOAT16", np.float16) if spec.vector_type == "halfvec" else ("FLOAT32", np.float32)
