"""JSON text of item values: written checked (a clear error for what cannot be stored) and read
back exactly, with orjson where it agrees with ``json`` and ``json`` where it would not."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from langmem_adapters.core.filters import MAX_NESTING, has_nul, is_utf8
from langmem_adapters.errors import InvalidValueError, NonJSONValueError

__all__ = ["dump_value", "has_long_number", "load_json"]


_LEAVES = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})
_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False, separators=(",", ":"))


def _check_keys(value: Any, depth: int = 0) -> bool:
    """Raise unless JSON object keys are strings (``json`` would silently turn ``1`` into ``"1"``);
    return whether the value holds only plain JSON types (exact dict/list/tuple/str/int/float/bool/
    None) and finite floats, which orjson writes exactly as ``json`` does."""
    if depth > MAX_NESTING:
        raise InvalidValueError(f"item value is nested more than {MAX_NESTING} levels deep")
    kind = type(value)
    plain = kind in _CONTAINERS
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        children: Iterable[Any] = value.values()
        for k in value:
            if type(k) is not str:
                if not isinstance(k, str):
                    raise NonJSONValueError(
                        f"item value has a non-string object key {k!r}; JSON keys are strings"
                    )
                plain = False
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return False
    for v in children:
        t = type(v)
        if t is float:
            plain = plain and math.isfinite(v)
        elif t not in _LEAVES:
            plain = _check_keys(v, depth + 1) and plain
    return plain


def _orjson_text(value: Any) -> str | None:
    """orjson's text for a plain value; None where it declines (integers beyond 64 bits, nesting
    beyond its limit), so that ``json`` decides."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None


def dump_value(value: Any) -> str:
    """Serialise an item value to JSON text, or raise a clear error naming why it cannot be stored.

    Plain values go through orjson (about ten times faster); anything else, and anything orjson
    declines, through ``json``, which raises the errors below."""
    if not isinstance(value, Mapping):
        raise NonJSONValueError(f"item value must be a dict, got {type(value).__name__}")
    text = _orjson_text(value) if _check_keys(value) else None
    if text is None:
        try:
            text = _ENCODER.encode(value)
        except ValueError as exc:
            raise InvalidValueError(
                f"item value is not valid JSON: {exc} (NaN and infinity cannot be stored)"
            ) from None
        except TypeError as exc:
            raise NonJSONValueError(f"item value is not JSON-serialisable: {exc}") from None
        except RecursionError:
            raise InvalidValueError("item value is nested too deeply to serialise") from None
    if has_nul(text):
        raise InvalidValueError("item value contains a NUL character, which cannot be stored")
    if not is_utf8(text):
        raise InvalidValueError(
            "item value contains a lone surrogate character, which is not valid UTF-8"
        )
    return text


def _maybe_big_int(value: Any) -> bool:
    """Whether a parsed value holds a whole float beyond 64-bit range, which orjson also gives for
    an integer literal too large for 64 bits."""
    stack = [value]  # iteratively: stored values may nest ~1000 deep
    while stack:
        v = stack.pop()
        t = type(v)
        if t is float and abs(v) >= 9.2e18 and v.is_integer():
            return True
        if t is dict:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
    return False


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def has_long_number(text: str | bytes) -> bool:
    """Whether JSON text has 19 digits in a row, which an integer literal that orjson may read
    differently (beyond 64 bits) needs: a C-speed test, cheaper than walking the parsed value.
    Text without one (or text embedding it, escaped) needs no check after ``orjson.loads``."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return _LONG_NUMBER in raw.translate(_DIGITS_TO_ZERO)


def load_json(text: str | bytes) -> Any:
    """Parse JSON that a store wrote: with orjson (several times faster on the read path), or with
    ``json`` where orjson would differ (integers beyond 64 bits, numbers beyond float range)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    if has_long_number(text) and _maybe_big_int(value):
        return json.loads(text)
    return value
