"""Vector data sets for the benchmarks, embedded once and cached as ``.npy`` under ``benchmarks/.cache/``.

Three kinds of data, because a search breadth tuned on one kind can miss its recall on another:

- ``hash``: the templated pseudo-word texts the other benchmarks load (:class:`benchmarks.bench_postgres.
  Dataset`), embedded with the package's 128-d ``HashEmbeddings``;
- ``text``: real English sentences (docstrings and comments of the installed packages and the standard
  library, deduplicated, seeded shuffle),
  embedded with WordLlama's bundled 256-d model; the queries are held-out sentences;
- ``random``: standard-normal 256-d vectors, queries fresh normals: no structure, the hard case.

A ``hash`` or ``random`` set is a prefix of the same set at a larger ``n``, with the same queries; a
``text`` set of ``n`` items is drawn (queries first) from the first ``n`` + queries sentences found.
:class:`PrecomputedEmbeddings` lets a store index exactly these vectors: an item's text is its id
(``m<i>``), a query's text ``q<j>``, so two stores given the same set hold the same vectors.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = [
    "CACHE_DIR",
    "KINDS",
    "PrecomputedEmbeddings",
    "VectorSet",
    "docstring_sentences",
    "load_set",
    "prose_sentences",
]

CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")

#: Data set name -> embedding dimensions.
KINDS: dict[str, int] = {"hash": 128, "text": 256, "random": 256}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class VectorSet:
    """``n`` item vectors and the query vectors of one data set (texts too where it has them)."""

    name: str
    vectors: np.ndarray
    queries: np.ndarray
    texts: list[str] | None = None
    query_texts: list[str] | None = None

    @property
    def dims(self) -> int:
        """Vector dimensions."""
        return int(self.vectors.shape[1])

    @cached_property
    def unit(self) -> np.ndarray:
        """The item vectors scaled to length 1 (float64), for exact cosine scores."""
        return _normalized(self.vectors)

    @cached_property
    def unit_queries(self) -> np.ndarray:
        """The query vectors scaled to length 1 (float64)."""
        return _normalized(self.queries)

    def scores(self, query: int) -> np.ndarray:
        """Exact cosine similarity of query ``query`` to every item."""
        return self.unit @ self.unit_queries[query]


def _normalized(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


class PrecomputedEmbeddings(Embeddings):
    """An embedder that looks vectors up instead of computing them: ``m<i>`` is item ``i`` of the set,
    ``q<j>`` its query ``j``. Any other text (a store's embedder-identity probe texts) gets a fixed
    vector derived from the text's hash, so the embedder stays deterministic."""

    def __init__(self, data: VectorSet) -> None:
        self.data = data

    def _one(self, text: str) -> list[float]:
        kind, index = text[:1], text[1:]
        if not index.isdigit() or kind not in ("m", "q"):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            return np.random.default_rng(seed).standard_normal(self.data.dims).tolist()
        matrix = self.data.vectors if kind == "m" else self.data.queries
        return [float(x) for x in matrix[int(index)]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


# --------------------------------------------------------------------------- real sentences


def _python_files() -> Iterator[str]:
    """Every ``.py`` file under the ``site-packages`` folders and the standard library on
    ``sys.path``, in a fixed (sorted) order."""
    roots = sorted(
        {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p) and "python3" in p}
    )
    for root in roots:
        for folder, dirs, files in os.walk(root):
            # The standard library's site-packages is walked as its own root (or not at all).
            dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "__pycache__"))
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def prose_sentences(doc: str) -> Iterator[str]:
    """The sentences of a docstring's prose paragraphs (not code, not sections such as ``Args:``),
    20-300 chars,
    starting with a capital, ending with ``.``/``!``/``?``, and mostly letters."""
    for paragraph in doc.strip().split("\n\n"):
        para = " ".join(paragraph.split())
        header = paragraph.strip().split("\n", 1)[0].endswith(":")  # "Args:", "Returns:", ...
        if header or not para[:1].isupper() or ">>>" in para or "::" in para:
            continue
        for sentence in _SENTENCE_END.split(para):
            if (
                20 <= len(sentence) <= 300
                and sentence[:1].isupper()
                and sentence[-1] in ".!?"
                and sum(c.isalpha() or c == " " for c in sentence) >= 0.85 * len(sentence)
            ):
                yield sentence


def comment_blocks(source: str) -> list[str]:
    """The text of each run of consecutive ``#`` comment lines of ``source`` (one paragraph each)."""
    blocks: list[list[str]] = [[]]
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("#") and not text.startswith("#!"):
            blocks[-1].append(text.lstrip("#").strip())
        elif blocks[-1]:
            blocks.append([])
    return [" ".join(b) for b in blocks if b]


def docstring_sentences(count: int, seed: int = 7) -> list[str]:
    """``count`` distinct English sentences from the docstrings and comments of the modules of the
    installed packages and the standard library (fewer if they have fewer): the first ``count``
    found in a fixed walk, then shuffled with ``seed``. The walk stops once it has ``count`` (a small set is quick to build) and is cached as
    JSON: a later call for as many or fewer reuses it."""
    path = os.path.join(CACHE_DIR, "sentences.json")
    harvest: dict[str, Any] = {"complete": False, "sentences": []}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            harvest = json.load(fh)
    if len(harvest["sentences"]) < count and not harvest["complete"]:
        harvest = _harvest(count)
        os.makedirs(CACHE_DIR, exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(harvest, fh)
        os.replace(path + ".tmp", path)
    found: list[str] = harvest["sentences"][:count]
    random.Random(seed).shuffle(found)
    return found


def _harvest(count: int) -> dict[str, Any]:
    """The first ``count`` distinct docstring sentences of the walk, and whether it walked all."""
    seen: set[str] = set()
    found: list[str] = []
    for file in _python_files():
        try:
            with open(file, encoding="utf-8") as fh:
                source = fh.read()
            tree = ast.parse(source)
        except (SyntaxError, ValueError, UnicodeDecodeError, OSError, RecursionError):
            continue
        docs = [
            ast.get_docstring(node) or ""
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for doc in [*docs, *comment_blocks(source)]:
            for sentence in prose_sentences(doc):
                if sentence not in seen:
                    seen.add(sentence)
                    found.append(sentence)
        if len(found) >= count:
            return {"complete": False, "sentences": found[:count]}
    return {"complete": True, "sentences": found}


# --------------------------------------------------------------------------- the sets


def _cached(path: str, build: Callable[[], object]) -> np.ndarray:
    """The array at ``path``, else ``build()`` saved there (float32)."""
    if os.path.exists(path):
        return np.load(path)
    array = np.asarray(build(), dtype=np.float32)
    os.makedirs(CACHE_DIR, exist_ok=True)
    np.save(path + ".tmp.npy", array)
    os.replace(path + ".tmp.npy", path)
    return array


def load_set(name: str, n: int, queries: int, seed: int = 7) -> VectorSet:
    """Data set ``name`` (one of :data:`KINDS`) with ``n`` items and ``queries`` queries, from the
    cache when it has been embedded before. ``text`` has at most as many items as the installed
    packages' docstrings give after the queries are held out (a ``ValueError`` if that is fewer)."""
    if name not in KINDS:
        raise ValueError(f"unknown data set {name!r}, expected one of {sorted(KINDS)}")
    dims = KINDS[name]
    stem = os.path.join(CACHE_DIR, f"{name}-{n}-{dims}-s{seed}")
    qpath = os.path.join(CACHE_DIR, f"{name}-q{queries}-{dims}-s{seed}.npy")
    if name == "random":
        items = _cached(
            stem + ".npy", lambda: np.random.default_rng(seed).standard_normal((n, dims))
        )
        qs = _cached(
            qpath, lambda: np.random.default_rng(seed + 1).standard_normal((queries, dims))
        )
        return VectorSet(name, items, qs)
    if name == "hash":
        from benchmarks.bench_postgres import Dataset, make_vocab, random_text
        from langmem_adapters.embeddings import HashEmbeddings

        texts = [v["text"] for _, _, v in Dataset.build(n, 50, seed).items]
        rng = random.Random(seed + 2)
        vocab = make_vocab(random.Random(seed))
        qtexts = [random_text(rng, vocab, 6) for _ in range(queries)]
        embedder = HashEmbeddings(dims)
        items = _cached(stem + ".npy", lambda: embedder.embed_documents(texts))
        qs = _cached(qpath, lambda: embedder.embed_documents(qtexts))
        return VectorSet(name, items, qs, texts, qtexts)
    from benchmarks.wordllama_embeddings import WordLlamaEmbeddings

    pool = docstring_sentences(queries + n, seed)
    if len(pool) < queries + n:
        raise ValueError(
            f"the installed packages' docstrings give {len(pool)} sentences,"
            f" fewer than {n} items + {queries} queries"
        )
    # The queries come first in the shuffled pool: held out from every n.
    qtexts, texts = pool[:queries], pool[queries:]
    model = WordLlamaEmbeddings()
    stem = os.path.join(CACHE_DIR, f"{name}-{n}-{dims}-q{queries}-s{seed}")  # the pool's size
    items = _cached(stem + ".npy", lambda: model.embed_documents(texts))
    qs = _cached(stem + "-queries.npy", lambda: model.embed_documents(qtexts))
    return VectorSet(name, items, qs, texts, qtexts)
