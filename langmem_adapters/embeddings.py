"""A deterministic, offline embedding model for tests, demos and notebooks.

``HashEmbeddings`` needs no model download and no network: it hashes words (and word bigrams)
into a fixed number of signed buckets and L2-normalises the result, so texts that share words
are close. It captures word overlap, not meaning: use a real model for production retrieval.
"""

from __future__ import annotations

import hashlib
import itertools
import re

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_adapters.errors import InvalidArgumentError

__all__ = ["HashEmbeddings"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbeddings(Embeddings):
    """Bag-of-words feature hashing into ``dims`` buckets; identical text gives identical vectors."""

    def __init__(self, dims: int = 64) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise InvalidArgumentError(f"dims must be a positive integer, got {dims!r}")
        self.dims = dims
        self.calls = 0
        self.texts_embedded = 0

    def _embed(self, text: str) -> list[float]:
        words = [w.lower() for w in _WORD.findall(text)]
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vec = np.zeros(self.dims, dtype=np.float64)
        for feature in features or [""]:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            n = int.from_bytes(digest, "little")
            vec[n % self.dims] += 1.0 if (n >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed each text; counts calls so tests can check that unchanged text is not re-embedded."""
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (the same function as documents)."""
        return self._embed(text)
