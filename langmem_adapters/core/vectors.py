"""Embedding configuration and field extraction shared by the vector-capable stores."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path

from langmem_adapters.core.calibration import Calibrator
from langmem_adapters.core.hybrid import HybridSpec
from langmem_adapters.core.refresh import Refreshed
from langmem_adapters.errors import (
    EmbeddingDimensionError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

__all__ = [
    "TARGET_RECALL",
    "Distance",
    "IndexSpec",
    "SearchStats",
    "VectorStats",
    "bounded",
    "check_vectors",
    "explicit_breadth",
    "extract_texts",
    "search_breadth",
    "text_hash",
]

Distance = Literal["cosine", "l2", "inner_product"]

#: The default of ``ann_index_config={"target_recall": ...}``: the recall@10 vector search keeps.
#: 0.99, not 0.95: on conversation data (issue #26) what a 0.95 search drops is 3.5-4x more likely
#: than an average result to be the memory asked for.
TARGET_RECALL = 0.99


@dataclass(frozen=True)
class IndexSpec:
    """A validated ``IndexConfig``: embedder, dimensions, default fields, ANN options, and the
    hybrid (lexical + vector) options when ``index={"hybrid": ...}`` asks for them."""

    dims: int
    embeddings: Embeddings
    fields: tuple[str, ...]
    distance: Distance
    kind: str
    vector_type: str
    ann: Mapping[str, Any]
    hybrid: HybridSpec | None = None

    @classmethod
    def from_config(cls, config: IndexConfig | Mapping[str, Any]) -> IndexSpec:
        """Validate an IndexConfig (plus this package's ``distance_type``/``ann_index_config`` keys)."""
        if not isinstance(config, Mapping):
            raise InvalidArgumentTypeError(
                f"index must be an IndexConfig dict, got {type(config).__name__}"
            )
        dims = config.get("dims")
        if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise InvalidArgumentError(f"index 'dims' must be a positive integer, got {dims!r}")
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise InvalidArgumentTypeError(
                f"index 'fields' must be a list of paths, got {fields!r}"
            )
        distance = config.get("distance_type", "cosine")
        if distance not in ("cosine", "l2", "inner_product"):
            raise InvalidArgumentError(
                f"distance_type must be 'cosine', 'l2' or 'inner_product', got {distance!r}"
            )
        ann: dict[str, Any] = dict(cast(Mapping[str, Any], config.get("ann_index_config") or {}))
        kind = ann.pop("kind", "hnsw")
        if kind == "flat":
            kind = "exact"
        if kind not in ("hnsw", "ivfflat", "exact"):
            raise InvalidArgumentError(
                f"ann_index_config kind must be 'hnsw', 'ivfflat' or 'exact', got {kind!r}"
            )
        target = ann.setdefault("target_recall", TARGET_RECALL)
        if target is not None and (
            not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target <= 1
        ):
            raise InvalidArgumentError(
                f"ann_index_config target_recall must be a number in (0, 1] or None, got {target!r}"
            )
        vector_type = ann.pop("vector_type", "vector")
        if vector_type not in ("vector", "halfvec"):
            raise InvalidArgumentError(
                f"vector_type must be 'vector' or 'halfvec', got {vector_type!r}"
            )
        return cls(
            dims=dims,
            embeddings=ensure_embeddings(config.get("embed")),
            fields=tuple(fields),
            distance=distance,
            kind=kind,
            vector_type=vector_type,
            ann=ann,
            hybrid=HybridSpec.from_option(config.get("hybrid")),
        )

    def score(self, distance: float) -> float:
        """Similarity from a backend distance: cosine 1-d, inner product the dot product, l2 -d."""
        return 1.0 - distance if self.distance == "cosine" else -distance


def extract_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[tuple[str, str]]:
    """``(field_name, text)`` pairs to embed: ``"$"`` is the whole value, ``[*]`` fans out per element
    (langgraph's ``get_text_at_path``, as the official stores read them)."""
    out: list[tuple[str, str]] = []
    for path in fields:
        texts = [t for t in get_text_at_path(value, path) if t]
        if len(texts) == 1:
            out.append((path, texts[0]))
        else:
            out.extend((f"{path}.{i}", t) for i, t in enumerate(texts))
    return out


def text_hash(text: str) -> str:
    """A short content hash: unchanged text keeps its stored embedding."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def check_vectors(
    vectors: Sequence[Sequence[float]], expected: int, dims: int
) -> list[list[float]]:
    """Reject an embedder answer with the wrong count or size before anything is written."""
    if len(vectors) != expected:
        raise EmbeddingDimensionError(
            f"embedder returned {len(vectors)} vectors for {expected} texts"
        )
    out = [list(map(float, v)) for v in vectors]
    for v in out:
        if not all(map(math.isfinite, v)):
            raise EmbeddingDimensionError("embedder returned a vector with NaN or infinite values")
        if len(v) != dims:
            raise EmbeddingDimensionError(
                f"embedder returned a vector of size {len(v)}; the index expects dims={dims}"
            )
    return out


@dataclass
class VectorStats(Refreshed):
    """How many vectors an index holds (a backend may cap the count), re-read at most once a minute."""

    count: int | None = None

    def update(self, count: int) -> None:
        self.count = count
        self.mark()


@dataclass
class SearchStats:
    """What both backends plan vector searches with: vectors in the index, and per namespace prefix
    how many it holds (so a search can choose between an exact scan and the ANN index); and the
    index's calibration (``None``: a fixed breadth), which sets the breadth or exact search. A
    backend's own readings live in its subclass (``postgres/stats.py``, ``redis/stats.py``)."""

    index: VectorStats = field(default_factory=VectorStats)
    prefixes: dict[str, VectorStats] = field(default_factory=dict)
    calibration: Calibrator | None = None

    def prefix(self, key: str) -> VectorStats:
        return bounded(self.prefixes, key)


def bounded(counts: dict[str, VectorStats], key: str) -> VectorStats:
    """The entry of ``key``, the map emptied first when it holds 4096 others."""
    if key not in counts and len(counts) >= 4096:
        counts.clear()
    return counts.setdefault(key, VectorStats())


def explicit_breadth(spec: IndexSpec) -> int:
    """The breadth ``ann_index_config`` sets (``ef_search``; ``ef_runtime`` as on Redis), else 0."""
    return int(spec.ann.get("ef_search") or spec.ann.get("ef_runtime") or 0)


def search_breadth(count: int, schedule: Sequence[tuple[int, int]]) -> int:
    """The HNSW search breadth for an index of ``count`` vectors: the first ``(up_to, breadth)`` step
    of ``schedule`` that covers it, else the last step's breadth."""
    for up_to, breadth in schedule:
        if count <= up_to:
            return breadth
    return schedule[-1][1]
