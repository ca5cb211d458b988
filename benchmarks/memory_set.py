"""A labeled agent-memory set, generated in code (seeded), for the retrieval-quality benchmark.

Each user of a support-and-assistant agent has about 32 memories under ``("memories", user)``:

- **identifier memories**: orders (5-digit numbers), support tickets (``TCK-20931``), error codes
  (``ERR_TLS_CERT_ALTNAME_INVALID``, ``ORA-12154``...), file paths, invoices (``INV-2024-0457``),
  booking references (``K7QX2M``), contacts (first and last names), project code names and door
  or locker codes. They are written the way an agent would note them: one template per kind, so
  every user's order memories read alike and only the number (and a product or a status) differs.
  Identifiers come in near-miss families, as real ones do: order numbers are drawn around a few
  bases shared by the users (one base per two users: ``48213``, ``48231``, ``48214``), so every
  order number differs from other users' in one or two digits; tickets likewise, error codes, first
  names, last names and code-name words are shared by many users, paths share their directories.
- **paraphrasable facts**: one per topic (job, pet, diet, hobby, home, travel, health, contact
  preference), drawn from a few values per topic, so many users share a fact.
- two **chit-chat notes** with no identifier and no question (as agent memories have).

Questions come in two kinds, both labeled with the relevant memories by attribute, not by hand:

- **identifier** questions name the identifier with the words a user would use ("what happened
  with order 48213?", "who is Priya Okafor?"), sharing little other wording with the memory;
- **paraphrase** questions ask for a fact in other words ("what does the user do for a living"
  for "Works as a nurse on a night shift", "who looks after patients in a hospital" across users).

A question's relevant memories within its user's namespace are that user's memories with the
question's attribute (one, by construction); across all users they are every user's memories with
it (several for a shared error code, name or fact; then recall@k counts ``min(k, relevant)``).
Nothing here is tuned to any retrieval method: the templates are how an agent's notes look, and
the same set serves vector, lexical and hybrid search alike.
"""

from __future__ import annotations

import random
import string
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from benchmarks.memory_vocab import (
    ADJ,
    AGENTS,
    ANIMALS,
    BOOKINGS,
    CHITCHAT,
    CODE_USES,
    ERROR_CODES,
    ERROR_CONTEXTS,
    FACTS,
    FIRST,
    ISSUES,
    LAST,
    ORDER_EVENTS,
    PATH_DIRS,
    PATH_EXTS,
    PATH_NAMES,
    PATH_USES,
    PRODUCTS,
    PROJECT_STATES,
    ROLES,
    SERVICES,
    TOPICS,
    WORKAROUNDS,
)

__all__ = ["ASK", "Memory", "MemorySet", "Question", "Scope", "build"]

Kind = Literal["identifier", "paraphrase"]
Scope = Literal["user", "global"]


@dataclass(frozen=True)
class Memory:
    """One stored memory: its user, its key (unique over the set), its text, and the attributes
    questions are matched on (``("order", "48213")``, ``("fact", "job/nurse")``...)."""

    user: str
    key: str
    text: str
    attrs: frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Question:
    """A question a user asks, its kind, and the attribute its relevant memories carry."""

    user: str
    text: str
    kind: Kind
    attr: tuple[str, str]


@dataclass
class MemorySet:
    """Memories and questions, with the relevant keys of each question within its user and
    across all users."""

    memories: list[Memory]
    questions: list[Question]

    def __post_init__(self) -> None:
        self._by_attr: dict[tuple[str, str], list[Memory]] = defaultdict(list)
        for m in self.memories:
            for a in m.attrs:
                self._by_attr[a].append(m)

    def relevant(self, question: Question, scope: Scope) -> set[str]:
        """Keys of the memories that answer ``question`` within its user's namespace or anywhere."""
        return {
            m.key
            for m in self._by_attr[question.attr]
            if scope == "global" or m.user == question.user
        }


def _near(rng: random.Random, base: str) -> str:
    """A near miss of a digit string: one digit changed, two adjacent digits swapped, or +-1..9."""
    digits = list(base)
    how = rng.randrange(3)
    if how == 0:
        i = rng.randrange(len(digits))
        digits[i] = rng.choice([d for d in string.digits if d != digits[i]])
    elif how == 1:
        i = rng.randrange(len(digits) - 1)
        digits[i], digits[i + 1] = digits[i + 1], digits[i]
    else:
        return str(int(base) + rng.choice([-9, -3, -2, -1, 1, 2, 3, 9])).zfill(len(base))
    return "".join(digits)


class _Ids:
    """Unique identifiers drawn in near-miss families around shared bases."""

    def __init__(self, rng: random.Random, width: int, bases: int) -> None:
        self.rng, self.width = rng, width
        low = 10 ** (width - 1)
        self.bases = [str(rng.randrange(low, 10 * low)) for _ in range(bases)]
        self.used: set[str] = set()

    def take(self) -> str:
        while True:
            cand = _near(self.rng, self.rng.choice(self.bases))
            if len(cand) == self.width and cand[0] != "0" and cand not in self.used:
                self.used.add(cand)
                return cand


def _booking(rng: random.Random, used: set[str]) -> str:
    alphabet = string.ascii_uppercase + string.digits
    while True:
        ref = "".join(rng.choices(alphabet, k=6))
        if ref not in used:
            used.add(ref)
            return ref


def build(users: int = 100, questions: int = 200, seed: int = 18) -> MemorySet:
    """About ``32 * users`` memories and ``questions`` questions (3/5 identifier, 2/5 paraphrase),
    every draw from ``random.Random(seed)``."""
    rng = random.Random(seed)
    orders = _Ids(rng, 5, max(4, users // 2))
    tickets = _Ids(rng, 5, max(4, users // 2))
    invoices = _Ids(rng, 4, max(4, users // 2))
    codes = _Ids(rng, 4, max(4, users // 2))
    refs: set[str] = set()
    names: set[tuple[str, str]] = set()
    memories: list[Memory] = []
    id_memories: list[Memory] = []
    fact_memories: list[tuple[Memory, tuple[str, str, str, str, str]]] = []

    for u in range(users):
        user = f"user{u:03d}"
        notes: list[tuple[str, set[tuple[str, str]]]] = []
        for _ in range(5):
            n = orders.take()
            notes.append(
                (
                    f"Order {n} ({rng.choice(PRODUCTS)}) {rng.choice(ORDER_EVENTS)}.",
                    {("order", n)},
                )
            )
        for _ in range(3):
            t = f"TCK-{tickets.take()}"
            notes.append(
                (
                    f"Support ticket {t}: {rng.choice(ISSUES)}; {rng.choice(AGENTS)} is handling it.",
                    {("ticket", t)},
                )
            )
        for code in rng.sample(ERROR_CODES, 3):
            notes.append(
                (
                    f"The {rng.choice(SERVICES)} fails with {code} when {rng.choice(ERROR_CONTEXTS)}; "
                    f"so far fixed by {rng.choice(WORKAROUNDS)}.",
                    {("error", code)},
                )
            )
        for _ in range(3):
            name = rng.choice(PATH_NAMES)
            path = f"{rng.choice(PATH_DIRS)}/{name}{rng.choice(PATH_EXTS)}"
            if path.startswith("C:"):
                path = path.replace("/", "\\")
            notes.append((f"The file {path} {rng.choice(PATH_USES)}.", {("path", path)}))
        for _ in range(2):
            inv = f"INV-2024-{invoices.take()}"
            amount = rng.choice([49, 120, 250, 480, 1200, 1999]) + rng.choice([0, 0.5, 0.99])
            notes.append(
                (
                    f"Invoice {inv} over {amount:.2f} EUR is due at the end of the month; "
                    f"the user asked for a copy with their VAT number.",
                    {("invoice", inv)},
                )
            )
        for _ in range(2):
            ref = _booking(rng, refs)
            notes.append(
                (f"Booked {rng.choice(BOOKINGS)} under reference {ref}.", {("booking", ref)})
            )
        for _ in range(2):
            while (person := (rng.choice(FIRST), rng.choice(LAST))) in names and len(names) < 250:
                pass
            names.add(person)
            full = f"{person[0]} {person[1]}"
            notes.append((f"{full} is the user's {rng.choice(ROLES)}.", {("person", full)}))
        project = f"{rng.choice(ADJ)} {rng.choice(ANIMALS)}"
        notes.append((f"Project {project} {rng.choice(PROJECT_STATES)}.", {("project", project)}))
        code = codes.take()
        notes.append((f"The code for {rng.choice(CODE_USES)} is {code}.", {("code", code)}))
        for note in rng.sample(CHITCHAT, 2):
            notes.append((note, set()))
        rng.shuffle(notes)
        for j, (text, attrs) in enumerate(notes):
            m = Memory(user, f"{user}-m{j:02d}", text, frozenset(attrs))
            memories.append(m)
            if attrs:
                id_memories.append(m)
        for topic in TOPICS:
            fact = rng.choice([f for f in FACTS if f[0] == topic])
            m = Memory(
                user,
                f"{user}-f-{topic}",
                fact[2],
                frozenset({("fact", f"{topic}/{fact[1]}"), ("topic", topic)}),
            )
            memories.append(m)
            fact_memories.append((m, fact))

    n_id = questions * 3 // 5
    asked: list[Question] = []
    for m in rng.sample(id_memories, min(n_id, len(id_memories))):
        asked.append(_identifier_question(rng, m))
    for m, fact in rng.sample(fact_memories, min(questions - n_id, len(fact_memories))):
        if rng.random() < 0.5:
            asked.append(Question(m.user, fact[3], "paraphrase", ("topic", fact[0])))
        else:
            asked.append(Question(m.user, fact[4], "paraphrase", ("fact", f"{fact[0]}/{fact[1]}")))
    return MemorySet(memories, asked)


#: Per identifier attribute, how users ask about it (``{}`` is the identifier).
ASK: dict[str, list[str]] = {
    "order": [
        "What happened with order {}?",
        "Any news on order #{}?",
        "Is order {} sorted out yet?",
    ],
    "ticket": ["What is {} about?", "Status of {}?"],
    "error": ["How did we get around {}?", "Where did we see {} before?"],
    "path": ["What do I need to know about {}?"],
    "invoice": ["How much is {} and when is it due?"],
    "booking": ["What did I book with {}?"],
    "person": ["Who is {} again?"],
    "project": ["Where are we with {}?"],
    "code": ["What does {} open?"],
}


def _identifier_question(rng: random.Random, m: Memory) -> Question:
    """A question naming ``m``'s identifier, worded as a user would ask it."""
    [(name, value)] = m.attrs
    return Question(m.user, rng.choice(ASK[name]).format(value), "identifier", (name, value))
