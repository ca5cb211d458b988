"""A real text-embedding model that works offline, for benchmarks and tests: WordLlama's bundled 256-d
static model (``wordllama`` 0.4 on PyPI, a test dependency, never a runtime one).

``WordLlama.load(disable_download=True, cache_dir=<the package directory>)`` loads the bundled weights
and tokenizer; without that ``cache_dir`` it looks for its tokenizer in a folder that does not exist
and tries the network.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["WordLlamaEmbeddings", "load_wordllama"]


@lru_cache(maxsize=1)
def load_wordllama() -> Any:
    """The bundled 256-d WordLlama model, loaded once per process without the network."""
    import wordllama

    return wordllama.WordLlama.load(
        disable_download=True, cache_dir=os.path.dirname(wordllama.__file__)
    )


class WordLlamaEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over WordLlama's bundled model (256 dimensions, thousands of
    sentences a second on two cores): realistic vectors carrying word meaning, offline."""

    dims = 256

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in load_wordllama().embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
