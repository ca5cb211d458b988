"""The ``information`` fusion (core.information): each candidate of either side scored by the rank
of its distance among both sides' candidates, in nats, plus the IDF sum it holds unless a tie or
the lexical side's cut hides what it says, as a share of the most a candidate could carry (0..1,
the order the nats give); ties keep the vector order, then the lexical one."""

from __future__ import annotations

import bisect
import math
import random

import pytest

from langmem_adapters.core.hybrid import FUSIONS, HybridSpec
from langmem_adapters.core.information import (
    LexicalCandidate,
    VectorCandidate,
    counted_idf,
    fuse_information,
    idf,
)
from langmem_adapters.errors import InvalidArgumentError

SPEC = HybridSpec(fusion="information")


def lexical(*sums: float) -> list[LexicalCandidate[str]]:
    """Lexical candidates ``l0, l1, ...`` with these IDF sums (distances do not matter here)."""
    return [LexicalCandidate(f"l{i}", s, 0.5) for i, s in enumerate(sums)]


def test_the_option_names_it() -> None:
    assert "information" in FUSIONS
    assert HybridSpec.from_option({"fusion": "information"}) == SPEC
    assert HybridSpec().fusion == "information"  # the default
    assert HybridSpec.from_option(True) == HybridSpec.from_option({}) == HybridSpec()
    with pytest.raises(InvalidArgumentError, match="fusion"):
        HybridSpec.from_option({"fusion": "nats"})


def test_each_candidate_ranks_by_distance_among_both_sides() -> None:
    """A lexical candidate nearer the query than one of the vector page ranks before it: its rank
    is among the union, not after the page. Score = (ln(M / rank) + IDF sum) / (ln M + the query's
    IDF mass), M = 4 candidates."""
    vector = [VectorCandidate("a", 0.1), VectorCandidate("b", 0.4)]
    lex = [
        LexicalCandidate("c", 2.0, 0.2),
        LexicalCandidate("b", 1.0, 0.4),
        LexicalCandidate("d", 0.5, 0.9),
    ]
    got = fuse_information(vector, lex, SPEC, page=2, depth=40, mass=4.0)
    assert [k for k, _ in got] == ["c", "a", "b", "d"]
    most = math.log(4) + 4.0
    expected = {
        "a": math.log(4) / most,
        "c": (math.log(2) + 2.0) / most,
        "b": (math.log(4 / 3) + 1.0) / most,
        "d": 0.5 / most,
    }
    assert dict(got) == pytest.approx(expected, abs=1e-12)


def test_one_is_nearest_of_all_holding_every_weighed_word_zero_farthest_holding_none() -> None:
    vector = [VectorCandidate("a", 0.1), VectorCandidate("b", 0.3)]
    lex = [LexicalCandidate("a", 2.5, 0.1), LexicalCandidate("c", 1.0, 0.9)]
    got = fuse_information(vector, lex, SPEC, page=2, depth=40, mass=2.5)
    assert got[0] == ("a", 1.0)
    more = fuse_information(vector, [*lex, LexicalCandidate("z", 0.0, 2.0)], SPEC, 2, 40, 2.5)
    assert more[-1] == ("z", 0.0)
    # a server's sum may pass its mass in the last bits: capped at 1.0
    over = fuse_information(vector, [LexicalCandidate("a", 2.5 + 1e-12, 0.1)], SPEC, 2, 40, 2.5)
    assert over[0] == ("a", 1.0)


def test_no_lexical_candidate_scores_as_a_vector_search() -> None:
    """Query words that selected no candidate say nothing of them: the mass is left out and the
    nearest scores 1.0; one candidate, with nothing to tell it from, scores 1.0 too."""
    vector = [VectorCandidate("a", 0.1), VectorCandidate("b", 0.2), VectorCandidate("c", 0.3)]
    got = fuse_information(vector, [], SPEC, page=3, depth=40, mass=7.0)
    assert [k for k, _ in got] == ["a", "b", "c"]
    assert [s for _, s in got] == pytest.approx([1.0, math.log(3 / 2) / math.log(3), 0.0])
    assert fuse_information(vector[:1], [], SPEC, page=1, depth=40, mass=7.0) == [("a", 1.0)]


def test_the_ranking_is_that_of_the_nats() -> None:
    """The share is a per-search shift and scale of ``-ln(rank) + IDF sum``: the same order,
    scores in [0, 1] and never rising down the ranking."""
    rng = random.Random(7)
    for _ in range(200):
        vector = [VectorCandidate(f"v{i}", rng.random()) for i in range(rng.randint(0, 6))]
        lex = sorted(
            (
                LexicalCandidate(f"l{i}", rng.choice([0.5, 1.0, 1.5, 2.7]), rng.random())
                for i in range(rng.randint(0, 6))
            ),
            key=lambda c: -c.idf,
        )
        got = fuse_information(vector, lex, SPEC, page=3, depth=40, mass=2.7)
        ordered = sorted([c.distance for c in vector] + [c.distance for c in lex])
        idf = counted_idf(lex, 3, 40)
        keys = [*(c.key for c in vector), *(c.key for c in lex)]
        dist = {**{c.key: c.distance for c in lex}, **{c.key: c.distance for c in vector}}
        nats = {
            k: -math.log(1 + bisect.bisect_left(ordered, dist[k])) + idf.get(k, 0.0) for k in keys
        }
        want = sorted(nats, key=lambda k: (-nats[k], keys.index(k)))
        assert [k for k, _ in got] == want
        scores = [s for _, s in got]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)


def test_equal_distances_share_a_rank() -> None:
    got = fuse_information(
        [VectorCandidate("a", 0.3)],
        [LexicalCandidate("b", 0.0, 0.3)],
        SPEC,
        page=1,
        depth=40,
        mass=0.0,
    )
    assert got == [("a", 1.0), ("b", 1.0)]  # both rank 1; the tie keeps the vector side first


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
    got = fuse_information(vector, lex, SPEC, page=2, depth=40, mass=1.0)
    assert [k for k, _ in got] == ["v2", "v1", "x", "w"]


def test_the_weights_scale_each_side_and_zero_leaves_it_out() -> None:
    vector = [VectorCandidate("a", 0.1), VectorCandidate("c", 0.3)]
    lex = [LexicalCandidate("b", 1.0, 0.2)]
    weighted = HybridSpec(fusion="information", vector_weight=0.5, lexical_weight=2.0)
    got = fuse_information(vector, lex, weighted, page=1, depth=40, mass=1.0)
    most = 0.5 * math.log(3) + 2.0
    assert dict(got) == pytest.approx(
        {"b": (0.5 * math.log(3 / 2) + 2.0) / most, "a": 0.5 * math.log(3) / most, "c": 0.0}
    )
    assert [k for k, _ in got] == ["b", "a", "c"]
    lexical_only = HybridSpec(fusion="information", vector_weight=0.0)
    assert fuse_information(vector, lex, lexical_only, page=1, depth=40, mass=2.0) == [("b", 0.5)]
    vector_only = HybridSpec(fusion="information", lexical_weight=0.0)
    got = fuse_information(vector, lex, vector_only, page=1, depth=40, mass=2.0)
    assert got == [("a", 1.0), ("c", 0.0)]


def test_a_word_one_item_holds_outweighs_any_vector_rank() -> None:
    """``idf`` is ``ln(N / df)``: a word only one of 12 items holds carries ln 12, as much as the
    nearest of 12 candidates, so its holder, last by distance, ties the nearest (vector order
    first) and beats every other; a word every item holds carries nothing."""
    assert idf(12, 1) == pytest.approx(math.log(12)) and idf(12, 12) == 0.0
    vector = [VectorCandidate(f"v{i}", 0.1 * i) for i in range(11)]
    holder = LexicalCandidate("x", idf(12, 1), 2.0)  # the farthest of the 12 candidates
    fused = fuse_information(vector, [holder], SPEC, page=10, depth=40, mass=idf(12, 1))
    assert [k for k, _ in fused[:3]] == ["v0", "x", "v1"]
    assert fused[0][1] == fused[1][1]
