"""What a batch embeds, written once for every backend: its search queries, and the texts of its
puts whose stored embedding cannot be reused.

Both are sub-plans: they yield :class:`Embed` requests (and nothing else), so a backend plan runs
them with ``yield from`` and its driver answers them with the store's embedder.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import SearchOp

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.ops import Write
from langmem_adapters.core.vectors import IndexSpec, check_vectors, extract_texts, text_hash

__all__ = ["Embed", "ItemTexts", "embed_missing", "embed_queries", "texts_to_embed"]

V = TypeVar("V")


@dataclass(frozen=True)
class Embed:
    """Texts to embed: documents, or search queries (``query=True`` uses ``embed_query``), with the
    store's embedder, or ``using`` another one (``reindex`` embedding with its new model)."""

    texts: list[str]
    query: bool = False
    using: Embeddings | None = None


Embedded = Generator[Embed, list[list[float]], V]
"""A sub-plan that only embeds: yields ``Embed`` and receives the vectors."""

ItemTexts = dict[tuple[str, str], list[tuple[str, str, str]]]
"""Per item ``(namespace text, key)``: its ``(field, text hash, text)`` triples to index."""


def embed_queries(
    spec: IndexSpec, searches: Iterable[SearchOp], encode: Callable[[list[float]], V]
) -> Embedded[dict[str, V]]:
    """The vector of each distinct query of the batch's searches (``embed_query``), checked and
    converted with ``encode`` into the backend's form."""
    queries = sorted({op.query for op in searches if op.query})
    if not queries:
        return {}
    embedded = yield Embed(queries, query=True)
    return dict(zip(queries, map(encode, check_vectors(embedded, len(queries), spec.dims))))


def texts_to_embed(spec: IndexSpec, writes: Iterable[Write]) -> ItemTexts:
    """The texts each put indexes: its own ``index`` fields, else the index's; none for deletes."""
    wanted: ItemTexts = {}
    for w in writes:
        if w.value is None:
            continue
        fields = spec.fields if w.index is None else (w.index or ())
        wanted[(nsp.join(w.namespace), w.key)] = [
            (field, text_hash(text), text) for field, text in extract_texts(w.value, fields)
        ]
    return wanted


def embed_missing(
    spec: IndexSpec,
    wanted: ItemTexts,
    known: Mapping[str, V],
    encode: Callable[[list[float]], V],
    using: Embeddings | None = None,
) -> Embedded[dict[tuple[str, str], list[tuple[str, str, V]]]]:
    """Each item's ``(field, text hash, vector)``: a stored vector of the same text (``known``, by
    text hash) where there is one, else one embedding per distinct new text (with the store's
    embedder, or ``using`` another)."""
    vectors = dict(known)
    missing = sorted({text for rows in wanted.values() for _, h, text in rows if h not in vectors})
    if missing:
        embedded = yield Embed(missing, using=using)
        for text, vec in zip(missing, check_vectors(embedded, len(missing), spec.dims)):
            vectors[text_hash(text)] = encode(vec)
    return {k: [(field, h, vectors[h]) for field, h, _ in rows] for k, rows in wanted.items()}
