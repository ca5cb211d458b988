"""Items as the Redis stores read them back: an item hash's ``m`` (its JSON meta) and ``c``
(created_at), decoded once, with a distance or vectors when a search asked for them."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.store.base import Item, SearchItem

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.items import make_item, make_search_item
from langmem_adapters.core.values import load_json
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.layout import datetime_of, text

__all__ = ["Record", "decode_vectors", "encode_vectors"]


@dataclass(slots=True)
class Record:
    """An item as read back: its JSON text fields decoded, plus distance or vectors when asked for.

    ``distance`` is pgvector's (cosine ``1 - cos``, inner product ``-dot``, l2 Euclidean), which
    ``IndexSpec.score`` turns into the score; ``raw_distance`` is the server's, which orders its
    KNN window; ``score``, when set, replaces the distance's (a hybrid search's fused value).
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created: int
    updated: int
    ttl: float | None
    distance: float | None = None
    raw_distance: float | None = None
    vectors: np.ndarray[Any, Any] | None = None
    score: float | None = None

    @classmethod
    def parse(cls, meta: Any, created: Any) -> Record:
        """The record of an item hash's ``m`` (JSON text, or already parsed) and ``c`` fields."""
        m = meta if isinstance(meta, dict) else load_json(meta)
        return cls(tuple(m["ns"]), m["k"], m["v"], int(created), int(m["u"]), m["l"])

    @property
    def sort_key(self) -> tuple[Any, ...]:
        """Search order: nearest first (or newest first without a query), then namespace and key."""
        if self.distance is not None:
            return (self.distance, nsp.join(self.namespace), self.key)
        return (-self.updated, nsp.join(self.namespace), self.key)

    def item(self) -> Item:
        """The record as a langgraph ``Item``."""
        created, updated = datetime_of(self.created), datetime_of(self.updated)
        return make_item(self.namespace, self.key, self.value, created, updated)

    def search_item(self, spec: IndexSpec | None) -> SearchItem:
        """The record as a ``SearchItem``, scored from its distance when it has one."""
        score = self.score
        if score is None and self.distance is not None and spec is not None:
            score = spec.score(self.distance)
        created, updated = datetime_of(self.created), datetime_of(self.updated)
        return make_search_item(self.namespace, self.key, self.value, created, updated, score)


def encode_vectors(vectors: list[list[float]]) -> str:
    """Vectors as an item's ``e`` field holds them (base64 float32), read by :func:`decode_vectors`."""
    return base64.b64encode(np.asarray(vectors, np.float32).tobytes()).decode()


def decode_vectors(raw: Any, spec: IndexSpec) -> np.ndarray[Any, Any]:
    """An item's stored vectors (base64 float32) as an (n, dims) float32 array."""
    if raw is None:
        return np.zeros((0, spec.dims), np.float32)
    return np.frombuffer(base64.b64decode(text(raw)), np.float32).reshape(-1, spec.dims)
