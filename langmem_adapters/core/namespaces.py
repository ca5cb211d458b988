"""Namespace matching for ``list_namespaces``: whole labels, ``"*"`` is exactly one label.

Labels never contain ``"."`` (langgraph's rule), so ``".".join(namespace)`` is an unambiguous text
form that backends may use for exact and prefix matching.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from langgraph.store.base import MatchCondition

__all__ = ["SEP", "join", "matches_all", "prefix_range", "split"]

SEP = "."


def join(namespace: Sequence[str]) -> str:
    """The text form of a namespace."""
    return SEP.join(namespace)


@lru_cache(maxsize=4096)
def split(text: str) -> tuple[str, ...]:
    """The namespace of a text form made by :func:`join` (cached: results repeat namespaces)."""
    return tuple(text.split(SEP)) if text else ()


def prefix_range(prefix: Sequence[str]) -> tuple[str, str]:
    """Half-open range ``[lo, hi)`` of the text forms of namespaces strictly below ``prefix``.

    ``"/"`` is the character after ``"."``, so in byte order every ``"a.b." + rest`` lies in range.
    """
    base = join(prefix)
    return base + SEP, base + "/"


def _label_match(pattern: Sequence[str], labels: Sequence[str]) -> bool:
    return all(p == "*" or p == label for p, label in zip(pattern, labels))


def matches_all(namespace: Sequence[str], conditions: Sequence[MatchCondition] | None) -> bool:
    """Whether a namespace satisfies every prefix/suffix condition."""
    for cond in conditions or ():
        path = tuple(cond.path)
        if len(path) > len(namespace):
            return False
        part = (
            namespace[: len(path)]
            if cond.match_type == "prefix"
            else namespace[len(namespace) - len(path) :]
        )
        if not _label_match(path, part):
            return False
    return True
