"""The ``information`` fusion (core.information): each candidate of either side scored by the rank
of its distance among both sides' candidates, in nats, plus the IDF sum it holds unless a tie or
the lexical side's cut hides what it says; ties keep the vector order, then the lexical one."""

from __future__ import annotations

import math

import pytest

from langmem_adapters.core.hybrid import FUSIONS, HybridSpec
from langmem_adapters.core.information import (
    LexicalCandidate,
    VectorCandidate,
    counted_idf,
    fuse_information,
)
from langmem_adapters.errors import InvalidArgumentError

SPEC = HybridSpec(fusion="information")


def lexical(*sums: float) -> list[LexicalCandidate[str]]:
    """Lexical candidates ``l0, l1, ...`` with these IDF sums (distances do not matter here)."""
    return [LexicalCandidate(f"l{i}", s, 0.5) for i, s in enumerate(sums)]


def test_the_option_names_it() -> None:
    assert "information" in FUSIONS
    assert HybridSpec.from_option({"fusion": "information"}) == SPEC
    assert HybridSpec().fusion == "relative"  # the default is unchanged
    with pytest.raises(InvalidArgumentError, match="fusion"):
        HybridSpec.from_option({"fusion": "nats"})


def test_each_candidate_ranks_by_distance_among_both_sides() -> None:
    """A lexical candidate nearer the query than one of the vector page ranks before it: its rank
    is among the union, not after the page. Score = -ln(rank) + IDF sum."""
    vector = [VectorCandidate("a", 0.1), VectorCandidate("b", 0.4)]
    lex = [
        LexicalCandidate("c", 2.0, 0.2),
        LexicalCandidate("b", 1.0, 0.4),
        LexicalCandidate("d", 0.5, 0.9),
    ]
    got = fuse_information(vector, lex, SPEC, page=2, depth=40)
    assert [k for k, _ in got] == ["c", "a", "b", "d"]
    expected = {"a": 0.0, "c": 2.0 - math.log(2), "b": 1.0 - math.log(3), "d": 0.5 - math.log(4)}
    assert dict(got) == pytest.approx(expected, abs=1e-12)


def test_equal_distances_share_a_rank() -> None:
    got = fuse_information(
        [VectorCandidate("a", 0.3)], [LexicalCandidate("b", 0.0, 0.3)], SPEC, page=1, depth=40
    )
    assert got == [("a", 0.0), ("b", 0.0)]  # both rank 1; the tie keeps the vector side first


def test_a_sum_more_than_a_page_of_candidates_share_does_not_count() -> None:
    tied = lexical(3.0, 3.0 + 1e-12, 3.0, 1.0)  # the same words, summed in another order
    assert counted_idf(tied, page=2, depth=40) == {"l3": 1.0}
    assert counted_idf(tied, page=3, depth=40) == {
        "l0": 3.0,
        "l1": 3.0 + 1e-12,
        "l2": 3.0,
        "l3": 1.0,
    }


def test_the_sum_the_cut_runs_through_does_not_count() -> None:
    """When the lexical side returned all it was asked for (``depth``), its last candidate's sum
    may be held by more it did not return: no candidate holding that sum counts."""
    full = lexical(3.0, 1.0, 1.0)
    assert counted_idf(full, page=10, depth=3) == {"l0": 3.0}
    assert counted_idf(full, page=10, depth=4) == {"l0": 3.0, "l1": 1.0, "l2": 1.0}


def test_ties_keep_the_vector_order_then_the_lexical_one() -> None:
    vector = [VectorCandidate("v2", 0.1), VectorCandidate("v1", 0.1)]
    lex = [LexicalCandidate("x", 0.0, 0.7), LexicalCandidate("w", 0.0, 0.7)]
    got = fuse_information(vector, lex, SPEC, page=2, depth=40)
    assert [k for k, _ in got] == ["v2", "v1", "x", "w"]


def test_the_weights_scale_each_side_and_zero_leaves_it_out() -> None:
    vector = [VectorCandidate("a", 0.1), VectorCandidate("c", 0.3)]
    lex = [LexicalCandidate("b", 1.0, 0.2)]
    weighted = HybridSpec(fusion="information", vector_weight=0.5, lexical_weight=2.0)
    got = fuse_information(vector, lex, weighted, page=1, depth=40)
    assert got == [("b", 2.0 - 0.5 * math.log(2)), ("a", 0.0), ("c", -0.5 * math.log(3))]
    lexical_only = HybridSpec(fusion="information", vector_weight=0.0)
    assert fuse_information(vector, lex, lexical_only, page=1, depth=40) == [("b", 1.0)]
    vector_only = HybridSpec(fusion="information", lexical_weight=0.0)
    got = fuse_information(vector, lex, vector_only, page=1, depth=40)
    assert got == [("a", 0.0), ("c", -math.log(2))]
