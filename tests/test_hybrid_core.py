"""The backend-independent half of hybrid search: option validation, words, and rank fusion."""

from __future__ import annotations

import pytest

from langmem_adapters import HashEmbeddings
from langmem_adapters.core.hybrid import RRF_K, STOP_WORDS, HybridSpec, fuse, query_words, words
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError


def test_option_forms() -> None:
    assert HybridSpec.from_option(None) is None
    assert HybridSpec.from_option(False) is None
    assert HybridSpec.from_option(True) == HybridSpec()
    spec = HybridSpec.from_option({"k": 10, "lexical_weight": 2, "text_config": "english"})
    assert spec == HybridSpec(k=10, lexical_weight=2.0, text_config="english")
    index = IndexSpec.from_config({"dims": 8, "embed": HashEmbeddings(8), "hybrid": True})
    assert index.hybrid == HybridSpec()
    assert IndexSpec.from_config({"dims": 8, "embed": HashEmbeddings(8)}).hybrid is None


@pytest.mark.parametrize(
    "option",
    [
        {"k": 0},
        {"k": True},
        {"depth": -1},
        {"lexical_weight": float("nan")},
        {"vector_weight": -1},
        {"text_config": "simple; DROP TABLE x"},
        {"fusion": "max"},
    ],
)
def test_bad_options_name_the_problem(option: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError, match="hybrid"):
        HybridSpec.from_option(option)


def test_bad_option_type() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="hybrid"):
        HybridSpec.from_option("yes")


def test_words_keep_only_word_characters() -> None:
    assert words('ERR_TLS "order" 48213 | @p:{x} -foo* (a) \x00') == [
        "err_tls",
        "order",
        "48213",
        "p",
        "x",
        "foo",
        "a",
    ]
    assert words("") == [] and words("'\"|@*-()") == []
    assert words("Straße ÉTÉ") == ["strasse", "été"]


def test_fuse_relative_is_relative_score_fusion() -> None:
    spec = HybridSpec(fusion="relative")
    # each side min-max scaled over what it returned, the weighted mean of the two
    fused = dict(fuse([("a", 0.9), ("b", 0.8), ("c", 0.5)], [("c", 12.0), ("d", 2.0)], spec))
    assert fused["a"] == pytest.approx(0.5)
    assert fused["b"] == pytest.approx(0.5 * 0.75)
    assert fused["c"] == pytest.approx(0.5)  # last of the vector side (0), first lexical (1)
    assert fused["d"] == pytest.approx(0.0)
    # a lexical score far above the rest keeps its distance: "c" beats "a"
    vector = [("a", 0.9), ("c", 0.88), ("b", 0.5)]
    order = [k for k, _ in fuse(vector, [("c", 9.0), ("d", 1.0)], spec)]
    assert order == ["c", "a", "b", "d"]


def test_fuse_rrf_is_reciprocal_rank_fusion() -> None:
    spec = HybridSpec(fusion="rrf")
    ranked = fuse([("a", 0.9), ("b", 0.8), ("c", 0.1)], [("c", 5.0), ("d", 1.0)], spec)
    fused = dict(ranked)
    assert fused["c"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["d"] == pytest.approx(1 / (RRF_K + 2))
    assert [k for k, _ in ranked] == ["c", "a", "b", "d"]
    assert spec.best_score() == pytest.approx(2 / (RRF_K + 1))
    assert HybridSpec().best_score() == 1.0
    assert HybridSpec(fusion="information").best_score() == 1.0  # its scores are shares


def test_fuse_weights_and_ties() -> None:
    relative = HybridSpec(fusion="relative")
    only_lexical = HybridSpec(vector_weight=0.0, fusion="relative")
    assert fuse([("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 4.0), ("a", 2.0)], only_lexical) == [
        ("b", 1.0),
        ("a", 0.0),
    ]
    weighted = dict(
        fuse(
            [("a", 1.0), ("b", 0.0)],
            [("b", 1.0)],
            HybridSpec(lexical_weight=3.0, fusion="relative"),
        )
    )
    assert weighted == {"a": pytest.approx(0.25), "b": pytest.approx(0.75)}
    # Equal fused values keep the vector ranking's order, then the lexical one's.
    assert [k for k, _ in fuse([("a", 2.0), ("b", 1.0)], [("b", 2.0), ("a", 1.0)], relative)] == [
        "a",
        "b",
    ]
    assert [k for k, _ in fuse([], [("x", 2.0), ("y", 2.0)], relative)] == ["x", "y"]
    assert fuse([], [], relative) == []


def test_query_words_leave_stop_words_out() -> None:
    assert query_words("What was the first issue I had with my new car?") == [
        "first",
        "issue",
        "new",
        "car",
    ]
    assert query_words("who am I? who") == ["who", "am", "i"]  # nothing else: kept
    assert query_words("?!") == []


def test_stop_words_are_plain_lowercase_words() -> None:
    """Postgres writes them into its lexical statement as a text[] literal, unquoted."""
    assert all(w.isascii() and w.isalpha() and w.islower() for w in STOP_WORDS)


def test_candidates_cover_the_page() -> None:
    spec = HybridSpec(depth=4)
    assert spec.candidates(0, 3) == 20
    assert spec.candidates(10, 10) == 80


def test_rare_words_by_share_of_collection_or_page() -> None:
    spec = HybridSpec()  # rare_share 0.02
    assert spec.rare_bound(10_000, 10) == 200  # 2% of the collection
    assert spec.rare_bound(3_200, 10) == 64
    assert spec.rare_bound(400, 10) == 10  # small collection: no more than the page
    assert spec.rare_bound(0, 0) == 1
    counts = {"order": 900, "48213": 3, "status": 201, "lyon": 200}
    assert spec.rare(counts, 10_000, 10) == ["48213", "lyon"]
    assert spec.rare(counts, 10_000, 600) == ["48213", "status", "lyon"]
    assert HybridSpec(rare_share=0.05).rare(counts, 10_000, 10) == ["48213", "status", "lyon"]
    assert HybridSpec(rare_share=1.0).rare(counts, 900, 10) == list(counts)


def test_floor_keeps_scores_near_the_best() -> None:
    assert HybridSpec(floor=0.5).floored([8.0, 4.0, 3.9, 1.0]) == 2
    assert HybridSpec().floored([8.0, 4.0, 3.9, 1.0]) == 4  # default 0: every match
    assert HybridSpec(floor=0.5).floored([]) == 0


@pytest.mark.parametrize("option", [{"rare_share": -0.1}, {"floor": 2}, {"rare_share": "x"}])
def test_rule_options_are_checked(option: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        HybridSpec.from_option(option)
