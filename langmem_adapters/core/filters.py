"""Search filters: parsed once into conditions, then compiled by each backend or evaluated in Python.

Semantics (the same on every store of this package):

- ``{"k": v}`` is ``{"k": {"$eq": v}}``; several keys are ANDed.
- ``$eq``/``$ne`` compare JSON values by type: ``1 == 1.0``, ``True != 1``, ``"1" != 1``; lists and
  objects compare as whole values. ``$ne`` matches a missing field.
- ``$gt $gte $lt $lte`` take a number or a string: numbers compare as numbers, strings by code point;
  a missing field or a value of another type never satisfies them.
- Extensions: ``$in`` / ``$nin`` (a list of values), ``$exists`` (a bool).
- A dotted key ``"a.b"`` is a path into nested objects; an all-digit segment also indexes arrays.
- Operands are JSON values a stored value could hold: string object keys, finite numbers, no NUL
  or lone surrogate, nested at most ``MAX_NESTING`` (500) levels, as item values are.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langmem_adapters.errors import InvalidFilterError

__all__ = [
    "COMPARISONS",
    "MAX_NESTING",
    "OPERATORS",
    "Condition",
    "get_path",
    "is_utf8",
    "json_equal",
    "matches",
    "parse_filter",
]

COMPARISONS = {"$gt", "$gte", "$lt", "$lte"}
OPERATORS = {"$eq", "$ne", "$in", "$nin", "$exists", *COMPARISONS}

MISSING: Any = object()
_INDEX = re.compile(r"-?[0-9]+")


class Condition(NamedTuple):
    """One test on one path of an item's value."""

    path: tuple[str, ...]
    op: str
    value: Any


_NUL_ESCAPE = re.compile(r"(?:^|[^\\])(?:\\\\)*\\u0000")


def has_nul(json_text: str) -> bool:
    """Whether JSON text encodes a NUL character (an escaped backslash before ``u0000`` does not)."""
    return "u0000" in json_text and _NUL_ESCAPE.search(json_text) is not None


# How deep an item value (and so a filter operand, which is compared with a part of one) may nest:
# deeper values are refused on put, and every backend serves this depth within Python's recursion
# limit (the JSON encoder and parser recurse once per level).
MAX_NESTING = 500


def is_utf8(text: str) -> bool:
    """Whether text can be sent as UTF-8 (a lone surrogate cannot)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_text(text: str, what: str) -> None:
    """Refuse a string no stored value can hold: with NUL (PostgreSQL text cannot) or a lone
    surrogate (not UTF-8, so no server can take it); ``what`` names it in the message."""
    if "\x00" in text:
        raise InvalidFilterError(f"{what} contains a NUL character")
    if not is_utf8(text):
        raise InvalidFilterError(f"{what} contains a lone surrogate, which is not valid UTF-8")


def _check_json(value: Any, where: str) -> None:
    """Raise unless ``value`` is a JSON value that a stored item could hold (see the module
    docstring), walking it without recursion so that any depth raises our error."""
    what = f"filter operand for {where}"
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            _check_text(v, what)
        elif v is None or isinstance(v, int):  # bool is an int
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InvalidFilterError(
                    f"{what} must be finite (NaN and infinity cannot be stored)"
                )
        elif isinstance(v, (list, tuple, dict)):
            if depth >= MAX_NESTING:
                raise InvalidFilterError(f"{what} is nested more than {MAX_NESTING} levels deep")
            if isinstance(v, dict):
                for k in v:
                    if not isinstance(k, str):
                        raise InvalidFilterError(f"{what} has a non-string object key {k!r}")
                    _check_text(k, what)
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
        else:
            raise InvalidFilterError(f"{what} is not a JSON value: {type(v).__name__}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _parse_path(key: Any) -> tuple[str, ...]:
    if not isinstance(key, str) or not key:
        raise InvalidFilterError(f"filter keys must be non-empty strings, got {key!r}")
    if key.startswith("$"):
        raise InvalidFilterError(f"unknown filter operator {key!r} at the top level")
    parts = tuple(key.split("."))
    if any(not p for p in parts):
        raise InvalidFilterError(f"filter path {key!r} has an empty segment")
    _check_text(key, f"filter path {key!r}")
    return parts


def _parse_operand(key: str, op: str, operand: Any) -> Any:
    where = f"{key!r} {op}"
    if op in COMPARISONS and not isinstance(operand, str) and not _is_number(operand):
        raise InvalidFilterError(
            f"filter operand for {where} must be a number or a string, got {type(operand).__name__}"
        )
    if op in ("$in", "$nin"):
        if isinstance(operand, (str, bytes, Mapping)) or not isinstance(operand, Sequence):
            raise InvalidFilterError(
                f"filter operand for {where} must be a list, got {type(operand).__name__}"
            )
        for element in operand:  # each compared with a stored part, as an $eq operand is
            _check_json(element, where)
        return tuple(operand)
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InvalidFilterError(
                f"filter operand for {where} must be true or false, got {operand!r}"
            )
        return operand
    _check_json(operand, where)
    return operand


def parse_filter(filter: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """Validate a filter and turn it into conditions; raises ``InvalidFilterError`` naming the problem."""
    if filter is None:
        return ()
    if type(filter) is not dict and not isinstance(filter, Mapping):
        raise InvalidFilterError(f"filter must be a dict, got {type(filter).__name__}")
    conditions: list[Condition] = []
    for key, spec in filter.items():
        path = _parse_path(key)
        if isinstance(spec, Mapping) and any(
            isinstance(k, str) and k.startswith("$") for k in spec
        ):
            for op, operand in spec.items():
                if op not in OPERATORS:
                    raise InvalidFilterError(
                        f"unknown filter operator {op!r} for {key!r}; supported: {', '.join(sorted(OPERATORS))}"
                    )
                conditions.append(Condition(path, op, _parse_operand(key, op, operand)))
        else:
            conditions.append(Condition(path, "$eq", _parse_operand(key, "$eq", spec)))
    return tuple(conditions)


def get_path(value: Any, path: Sequence[str]) -> Any:
    """The JSON value at ``path`` (object keys, or array indexes for integer segments), or MISSING."""
    current = value
    for part in path:
        if isinstance(current, Mapping):
            if part not in current:
                return MISSING
            current = current[part]
        elif isinstance(current, list):
            if not _INDEX.fullmatch(part):
                return MISSING
            index = int(part)
            if not -len(current) <= index < len(current):
                return MISSING
            current = current[index]
        else:
            return MISSING
    return current


def _scalar_equal(a: Any, b: Any) -> bool | None:
    """``json_equal`` of two values unless both are objects or both arrays (then None)."""
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return None if a.keys() == b.keys() else False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return None if len(a) == len(b) else False
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def json_equal(a: Any, b: Any) -> bool:
    """Typed JSON equality: numbers by value, booleans only equal booleans, containers element-wise
    (walked without recursion: values nest up to ``MAX_NESTING`` levels)."""
    same = _scalar_equal(a, b)
    if same is not None:
        return same
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        same = _scalar_equal(a, b)
        if same is False:
            return False
        if same is None:
            pairs.extend(((a[k], b[k]) for k in a) if isinstance(a, Mapping) else zip(a, b))
    return True


_COMPARE = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if _is_number(operand):
        if not _is_number(actual):
            return False
    elif not isinstance(actual, str):
        return False
    return bool(_COMPARE[op](actual, operand))


def _holds(value: Mapping[str, Any], cond: Condition) -> bool:
    actual = get_path(value, cond.path)
    if cond.op == "$exists":
        return (actual is not MISSING) == cond.value
    if cond.op == "$ne":
        return actual is MISSING or not json_equal(actual, cond.value)
    if cond.op == "$nin":
        return actual is MISSING or not any(json_equal(actual, v) for v in cond.value)
    if actual is MISSING:
        return False
    if cond.op == "$eq":
        return json_equal(actual, cond.value)
    if cond.op == "$in":
        return any(json_equal(actual, v) for v in cond.value)
    return _compare(actual, cond.op, cond.value)


def matches(value: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    """Whether an item value satisfies every condition (the Python twin of the SQL/Query Engine filters)."""
    return all(_holds(value, c) for c in conditions)
