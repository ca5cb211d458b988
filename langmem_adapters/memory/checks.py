"""Argument checks shared by the tiers (and the memory tools), raising the memory errors.

Values are checked with the stores' own JSON and filter rules before anything is written, so a
write or a query that one backend would refuse fails the same way on every backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langmem_adapters.core.filters import Condition, parse_filter
from langmem_adapters.core.values import dump_value
from langmem_adapters.errors import (
    InvalidMemoryQueryError,
    InvalidMemoryWriteError,
    InvalidNamespaceError,
    InvalidValueError,
    MemoryTypeError,
    NonJSONValueError,
)
from langmem_adapters.memory.records import Attribution

__all__ = [
    "check_attribution",
    "check_filter",
    "check_json",
    "check_k",
    "check_metadata",
    "check_text",
    "validate_root",
]


def check_text(text: object, what: str = "text") -> str:
    """Return ``text`` if it is a non-blank string that every store can hold."""
    if not isinstance(text, str):
        raise MemoryTypeError(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise InvalidMemoryWriteError(f"{what} must not be empty")
    return str(check_json(text, what))


def check_json(value: Any, what: str) -> Any:
    """Reject values some store cannot hold as JSON (including NUL characters, which PostgreSQL
    refuses), with the same errors this package's stores raise, so every backend behaves alike."""
    try:
        dump_value({"value": value})
    except (InvalidValueError, NonJSONValueError) as exc:
        raise type(exc)(f"{what}: {exc}") from None
    return value


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A JSON-safe copy of user metadata (``{}`` when absent)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise MemoryTypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
    return dict(check_json(dict(metadata), "metadata"))


def check_attribution(attribution: Attribution | None) -> Attribution:
    """The given attribution, or an empty one."""
    if attribution is None:
        return Attribution()
    if not isinstance(attribution, Attribution):
        raise MemoryTypeError(
            f"attribution must be an Attribution, got {type(attribution).__name__}"
        )
    check_json(attribution.to_dict(), "attribution")
    return attribution


def check_k(k: object) -> int:
    """A positive result count."""
    if not isinstance(k, int) or isinstance(k, bool):
        raise MemoryTypeError(f"k must be an int, got {type(k).__name__}")
    if k < 1:
        raise InvalidMemoryQueryError(f"k must be at least 1, got {k}")
    return k


def validate_root(namespace: object) -> tuple[str, ...]:
    """Check a namespace root with langgraph's label rules and return it as a tuple."""
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise MemoryTypeError(
            f"namespace must be a tuple of labels such as ('acme', 'user-42'), got {namespace!r}"
        )
    root = tuple(namespace)
    if not root:
        raise InvalidNamespaceError("namespace root cannot be empty")
    for label in root:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {root}: labels are non-empty strings "
                "without '.' or NUL"
            )
    if root[0] == "langgraph":
        raise InvalidNamespaceError(f'namespace root cannot start with "langgraph": {root}')
    return root


def check_filter(filter: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """Validate a metadata filter up front, with the stores' own rules (typed ``$eq $ne $gt $gte
    $lt $lte``, ``$in $nin $exists``, dotted paths), so a typo fails even when nothing would match."""
    return parse_filter(filter)
