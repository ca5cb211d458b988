"""The vectors the calibration tests store and search with, and what they share around them.

``DATA`` (stored) and ``QUERIES`` are standard-normal vectors (the hard case for an ANN index);
:class:`TableEmbeddings` maps the texts ``x:<i>`` and ``q:<i>`` to them.
"""

from __future__ import annotations

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings

from langmem_adapters import HashEmbeddings
from langmem_adapters.postgres import PostgresStore
from tests import servers

N, DIMS = 4000, 96
DATA = np.random.default_rng(0).standard_normal((N, DIMS)).astype(np.float32)
QUERIES = np.random.default_rng(1).standard_normal((120, DIMS)).astype(np.float32)


class TableEmbeddings(Embeddings):
    """Stored text ``x:<i>`` embeds as ``DATA[i]``, query ``q:<i>`` as ``QUERIES[i]`` (standard-normal
    vectors, the hard case); any other text (the identity probe) by hashing."""

    def __init__(self) -> None:
        self.other = HashEmbeddings(DIMS)

    def _one(self, text: str, table: np.ndarray) -> list[float]:
        head, _, index = text.partition(":")
        if head in ("x", "q") and index.isdigit():
            return [float(v) for v in table[int(index)]]
        return self.other.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t, DATA) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text, QUERIES)


def drop_pg(store: PostgresStore) -> None:
    """Drop the tables of ``store`` (each calibration test has its own table prefix)."""
    with psycopg.connect(servers.postgres_dsn(), autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s",
            [store.tables.prefix + "\\_%"],
        ).fetchall()
        for (name,) in tables:
            conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
