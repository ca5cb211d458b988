"""Client-side BM25 (``core/bm25.py``) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from langmem_adapters.core.bm25 import K1, B, Corpus, bm25


def test_hand_computed_scores() -> None:
    texts = [["order", "48213", "shipped"], ["order", "order", "late"], ["cat"]]
    # N = 3, avgdl = 7 / 3; "48213" in 1 text, "order" in 2
    idf_id = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    idf_order = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm3 = K1 * (1 - B + B * 3 / (7 / 3))  # a 3-word text
    first = idf_id * 2.2 / (1 + norm3) + idf_order * 2.2 / (1 + norm3)
    second = idf_order * 2 * 2.2 / (2 + norm3)
    assert bm25(["order", "48213"], texts) == pytest.approx([first, second, 0.0])
    assert first > second  # the rare identifier outweighs a repeated common word


def test_repeated_query_words_count_once_and_parameters() -> None:
    texts = [["a", "b"], ["b", "b", "b", "c"]]
    assert bm25(["b", "b"], texts) == bm25(["b"], texts)
    idf = math.log(1 + 0.5 / 2.5)
    # b = 0: no length normalisation, k1 = 0: term frequency does not count
    assert bm25(["b"], texts, k1=0.0) == pytest.approx([idf, idf])
    assert bm25(["b"], texts, b=0.0) == pytest.approx(
        [idf * 2.2 / (1 + 1.2), idf * 3 * 2.2 / (3 + 1.2)]
    )


def test_empty_inputs() -> None:
    assert bm25([], [["a"]]) == [0.0]
    assert bm25(["a"], []) == []
    assert bm25(["a"], [[], []]) == [0.0, 0.0]  # no words anywhere: no division by zero


def test_collection_statistics() -> None:
    """With a corpus, N, n(t) and avgdl are the collection's (each at least what the searched
    texts show), so two texts of a namespace score as they would in the whole collection."""
    corpus = Corpus()
    assert corpus.stale()
    corpus.update(100, 400, [("order", 40), ("48213", 1), ("lyon", 2)])
    assert not corpus.stale()
    assert corpus.df == {"order": 40, "lyon": 2}  # a word held once is found by counting
    assert corpus.held("48213", 1) == 1 and corpus.held("order", 2) == 40
    texts = [["order", "48213"], ["order", "lyon", "x", "y"]]
    idf_order = math.log(1 + (100 - 40 + 0.5) / (40 + 0.5))
    idf_id = math.log(1 + (100 - 1 + 0.5) / (1 + 0.5))
    norm2, norm4 = K1 * (1 - B + B * 2 / 4), K1 * (1 - B + B * 4 / 4)  # avgdl 400 / 100
    got = bm25(["order", "48213"], texts, corpus=corpus)
    assert got == pytest.approx(
        [idf_order * 2.2 / (1 + norm2) + idf_id * 2.2 / (1 + norm2), idf_order * 2.2 / (1 + norm4)]
    )
    assert got != bm25(["order", "48213"], texts)  # the namespace alone weighs "order" higher


def test_a_corpus_smaller_than_the_texts_is_not_used() -> None:
    """A corpus counted before most of the searched texts were written (fewer texts than the
    search holds) gives way to the texts' own statistics."""
    corpus = Corpus()
    corpus.update(1, 2, [])
    texts = [["a", "b"], ["b", "c"], ["c"]]
    assert bm25(["b"], texts, corpus=corpus) == bm25(["b"], texts)
