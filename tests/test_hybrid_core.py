"""The backend-independent half of hybrid search: option validation, words, and rank fusion."""

from __future__ import annotations

import pytest

from langmem_adapters import HashEmbeddings
from langmem_adapters.core.hybrid import RRF_K, HybridSpec, fuse, words
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
        {"fusion": "rrf"},
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


def test_fuse_is_reciprocal_rank_fusion() -> None:
    spec = HybridSpec()
    fused = dict(fuse(["a", "b", "c"], ["c", "d"], spec))
    assert fused["c"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["d"] == pytest.approx(1 / (RRF_K + 2))
    assert [k for k, _ in fuse(["a", "b", "c"], ["c", "d"], spec)] == ["c", "a", "b", "d"]


def test_fuse_weights_and_ties() -> None:
    only_lexical = HybridSpec(vector_weight=0.0)
    assert fuse(["a", "b", "c"], ["b", "a"], only_lexical) == [
        ("b", 1 / (RRF_K + 1)),
        ("a", 1 / (RRF_K + 2)),
    ]
    # Equal fused values keep the vector ranking's order, then the lexical one's.
    assert [k for k, _ in fuse(["a", "b"], ["b", "a"], HybridSpec())] == ["a", "b"]
    assert [k for k, _ in fuse([], ["x", "y"], HybridSpec())] == ["x", "y"]
    assert fuse([], [], HybridSpec()) == []


def test_candidates_cover_the_page() -> None:
    spec = HybridSpec(depth=4)
    assert spec.candidates(0, 3) == 20
    assert spec.candidates(10, 10) == 80
