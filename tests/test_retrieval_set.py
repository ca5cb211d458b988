"""The retrieval benchmark's labeled memory set and metrics (benchmarks/memory_set.py,
benchmarks/bench_retrieval.py): sizes, labels that hold, near-miss identifiers, and the metrics."""

from __future__ import annotations

import re

import pytest

from benchmarks import bench_retrieval as bench
from benchmarks.memory_set import build


def test_full_set_has_the_issues_sizes_and_is_reproducible() -> None:
    data = build()
    assert len(data.memories) >= 3000 and len({m.user for m in data.memories}) == 100
    kinds = [q.kind for q in data.questions]
    assert (
        len(kinds) >= 150 and kinds.count("identifier") >= 100 and kinds.count("paraphrase") >= 50
    )
    assert len({m.key for m in data.memories}) == len(data.memories)
    again = build()
    assert [q.text for q in again.questions] == [q.text for q in data.questions]
    assert [m.text for m in again.memories] == [m.text for m in data.memories]


def test_every_question_has_its_answer_in_its_users_namespace() -> None:
    data = build(users=20, questions=80)
    texts = {m.key: m.text for m in data.memories}
    for q in data.questions:
        mine = data.relevant(q, "user")
        assert mine and mine <= data.relevant(q, "global")
        assert all(key.startswith(q.user + "-") for key in mine)
        if q.kind == "identifier":
            # The identifier the question names is written in every relevant memory.
            assert all(q.attr[1] in texts[key] for key in data.relevant(q, "global"))
            assert q.attr[1] in q.text


def test_identifiers_come_in_near_miss_families() -> None:
    data = build()
    orders = [n for m in data.memories for n in re.findall(r"Order (\d{5})", m.text)]
    assert len(set(orders)) == len(orders)  # every order number is one user's

    def near(a: str) -> bool:
        return any(sum(x != y for x, y in zip(a, b, strict=True)) <= 2 for b in orders if b != a)

    # Most order numbers differ from another user's in at most two digits.
    assert sum(map(near, orders)) > 0.9 * len(orders)


def test_metrics() -> None:
    ranked = ["a", "b", "c", "d", "e", "f"]
    assert bench.recall_at(ranked, {"b", "z"}, 5) == 0.5
    assert bench.recall_at(ranked, {"f"}, 5) == 0.0
    # With more relevant items than k, finding k of them is full recall.
    assert bench.recall_at(ranked, set("abcdefg"), 5) == 1.0
    assert bench.reciprocal_rank(ranked, {"c", "e"}, 10) == 1 / 3
    assert bench.reciprocal_rank(ranked, {"f"}, 5) == 0.0
    assert bench.hybrid_option("hybrid:0.5") == {"lexical_weight": 0.5}
    assert bench.hybrid_option("lexical") == {"vector_weight": 0}
    assert bench.hybrid_option("hybrid:information") == {"fusion": "information"}
    with pytest.raises(SystemExit, match="unknown mode"):
        bench.hybrid_option("hybrid:nats")
