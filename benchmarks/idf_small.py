"""Offline check of the ``information`` fusion on small collections (#26): where an identifier's
memory ranks among near-miss ones under each IDF form of the fusion's IDF sums.

The memories are ``tests/memory/test_hybrid_recall.py``'s order texts (``order_text``; its 12
``NUMBERS`` first, then one-digit variants of 48213 for larger collections, the first ``N`` for
smaller ones), embedded with WordLlama's bundled 256-d model. Every memory is a candidate of the
vector side (``M = N``, as a tier's page of 50 holds them all); the lexical side's candidates are
the memories holding a query word that selects (``HybridSpec.rare``), with ``core.hybrid``'s
tokenizer. The fusion is the stores' own, ``core.information.fuse_information``; the only thing
that varies is the IDF of a word held by ``df`` of the ``N`` memories:

- ``bm25``: ``ln(1 + (N - df + 0.5) / (df + 0.5))``, BM25's smoothed IDF (the stores' today);
- ``plain``: ``ln(N / df)``, the information of holding the word, the vector side's unit;
- ``plain-ties``: ``plain`` with equal fused scores ordered by the IDF sum (the stores keep the
  vector side's order): a memory holding the only copy of a word then never ranks below one
  holding no query word, even last of ``M = N`` by the vector side, where the two tie.

Relative-score fusion (``core.hybrid.fuse``, the default; the lexical side scored by
``core.bm25``) is printed beside them. For each ``N``: the identifier queries (each memory's
number alone, "48213" is the test's) answered first, and the worst rank; then paraphrase
queries, the best rank of a memory of the product they ask about. docs/hybrid.md, "The
information fusion with IDF = ln(N / df)".

    python benchmarks/idf_small.py
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.wordllama_embeddings import WordLlamaEmbeddings
from langmem_adapters.core.bm25 import Corpus, bm25
from langmem_adapters.core.hybrid import HybridSpec, fuse, query_words, words
from langmem_adapters.core.information import LexicalCandidate, VectorCandidate, fuse_information
from tests.memory.test_hybrid_recall import NUMBERS, PRODUCTS, order_text

SPEC = HybridSpec()
INFORMATION = HybridSpec(fusion="information")
PAGE = 10
DEPTH = SPEC.candidates(0, PAGE)
SIZES = (3, 6, 12, 25, 50)
#: Questions about a product, the memories of that product being the answers: the first ones
#: name it, the last ones do not (no word in common with any memory but "order").
PARAPHRASES = {
    "which order was the standing desk?": "standing desk",
    "the desk lamp that arrived damaged": "desk lamp",
    "what happened to my yoga mat order?": "yoga mat",
    "my sit-stand workstation came broken": "standing desk",
    "the smoothie maker I ordered": "blender",
}


def numbers(n: int) -> list[int]:
    """``n`` order numbers: the test's 12, then one-digit variants of 48213 not among them, then
    48213 + 2, + 3, ... (near misses all)."""
    first = str(NUMBERS[0])
    variants = [
        int(first[:p] + d + first[p + 1 :]) for p in range(5) for d in "123456789" if d != first[p]
    ]
    pool = list(dict.fromkeys([*NUMBERS, *variants]))
    pool += [NUMBERS[0] + k for k in range(2, n + 2) if NUMBERS[0] + k not in pool]
    return pool[:n]


def idf_of(form: str, size: int, df: int) -> float:
    """The IDF of a word held by ``df`` (>= 1) of ``size`` memories, in ``form``."""
    if form == "plain":
        return math.log(size / df)
    return math.log(1.0 + (size - df + 0.5) / (df + 0.5))


@dataclass
class Memories:
    """A collection of order memories: texts, words, unit vectors and word statistics."""

    texts: list[str]
    tokens: list[list[str]]
    vecs: np.ndarray
    df: dict[str, int]

    @classmethod
    def of(cls, n: int, embed: Callable[[list[str]], np.ndarray]) -> Memories:
        texts = [order_text(i, num) for i, num in enumerate(numbers(n))]
        tokens = [words(t) for t in texts]
        df: dict[str, int] = {}
        for toks in tokens:
            for w in set(toks):
                df[w] = df.get(w, 0) + 1
        return cls(texts, tokens, embed(texts), df)


def ranking(mem: Memories, query: str, qvec: np.ndarray, form: str) -> list[int]:
    """The memories in fused order under ``form`` (``relative``: relative-score fusion)."""
    distance = 1.0 - mem.vecs @ qvec
    order = np.argsort(distance, kind="stable")
    qw = query_words(query)
    counts = {w: mem.df.get(w, 0) for w in qw}
    rare = SPEC.rare(counts, len(mem.texts), PAGE)
    cands = sorted(
        {i for i, toks in enumerate(mem.tokens) for w in rare if counts[w] and w in toks}
    )
    if form == "relative":
        corpus = Corpus()
        corpus.update(len(mem.texts), sum(map(len, mem.tokens)), mem.df.items())
        scored = bm25(qw, [mem.tokens[i] for i in cands], corpus=corpus)
        lex = sorted(zip(cands, scored, strict=True), key=lambda p: (-p[1], p[0]))[:DEPTH]
        vec = [(int(i), float(1.0 - distance[i])) for i in order]
        return [i for i, _ in fuse(vec, [p for p in lex if p[1] > 0], SPEC)]
    size, plain = len(mem.texts), form.removesuffix("-ties")
    idf = {w: idf_of(plain, size, counts[w]) for w in qw if counts[w]}
    sums = {i: sum(v for w, v in idf.items() if w in mem.tokens[i]) for i in cands}
    lexical = [
        LexicalCandidate(i, sums[i], float(distance[i]))
        for i in sorted(cands, key=lambda i: (-sums[i], i))[:DEPTH]
    ]
    vector = [VectorCandidate(int(i), float(distance[i])) for i in order]
    fused = fuse_information(vector, lexical, INFORMATION, PAGE, DEPTH, sum(idf.values()))
    if form.endswith("-ties"):  # equal scores ordered by the IDF sum, not by the vector side
        fused = sorted(fused, key=lambda kv: (-round(kv[1], 9), -sums.get(kv[0], 0.0)))
    return [i for i, _ in fused]


def best_rank(ranked: Sequence[int], answers: set[int]) -> int:
    """1-based rank of the first answer in ``ranked``."""
    return 1 + next(n for n, i in enumerate(ranked) if i in answers)


def main() -> int:
    """Print, per collection size and fusion, the identifier and paraphrase ranks."""
    model = WordLlamaEmbeddings()

    def embed(texts: list[str]) -> np.ndarray:
        vecs = np.array(model.embed_documents(texts), dtype=np.float64)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)

    forms = ("relative", "bm25", "plain", "plain-ties")
    print("| N | fusion | identifiers first | worst rank | 48213 (vector rank) | paraphrases |")
    print("|---:|---|---:|---:|---:|---|")
    for n in SIZES:
        mem = Memories.of(n, embed)
        nums = numbers(n)
        queries = [str(num) for num in nums] + list(PARAPHRASES)
        qvecs = embed(queries)
        vrank = 1 + int(np.sum(mem.vecs @ qvecs[0] > mem.vecs[0] @ qvecs[0]))
        for form in forms:
            ranks = [
                best_rank(ranking(mem, str(q), qvecs[k], form), {k}) for k, q in enumerate(nums)
            ]
            para: list[str] = []
            for q, v in zip(PARAPHRASES.items(), qvecs[len(nums) :], strict=True):
                answers = {i for i in range(n) if PRODUCTS[i % len(PRODUCTS)] == q[1]}
                para.append(
                    str(best_rank(ranking(mem, q[0], v, form), answers)) if answers else "-"
                )
            print(
                f"| {n} | {form} | {sum(r == 1 for r in ranks)}/{n} | {max(ranks)} | "
                f"{ranks[0]} ({vrank}) | {' '.join(para)} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
