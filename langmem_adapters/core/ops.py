"""Validation and grouping of a batch of store operations, shared by every backend.

A batch is validated whole before anything runs, so bad input raises and writes nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
from langgraph.store.base import validate_op_namespace as langgraph_validate_namespace

from langmem_adapters.core.filters import MAX_NESTING, Condition, has_nul, parse_filter
from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidNamespaceError,
    InvalidValueError,
    NonJSONValueError,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_ID_BYTES",
    "MAX_ROWS",
    "MAX_TTL_MINUTES",
    "Batch",
    "Write",
    "check_count",
    "check_item_id",
    "check_page_size",
    "check_prefix",
    "dump_value",
    "has_long_number",
    "item_namespace",
    "load_json",
    "plan_batch",
    "validate_key",
    "validate_namespace",
]


def _is_utf8(text: str) -> bool:
    """Whether text can be sent as UTF-8 (a lone surrogate cannot)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_key(key: Any) -> str:
    """Keys are strings without NUL characters (PostgreSQL text cannot hold NUL) or lone surrogates."""
    if not isinstance(key, str):
        raise InvalidArgumentTypeError(f"item key must be a string, got {type(key).__name__}")
    if "\x00" in key:
        raise InvalidValueError(f"item key {key!r} contains a NUL character")
    if not _is_utf8(key):
        raise InvalidValueError(
            f"item key {key!r} contains a lone surrogate, which is not valid UTF-8"
        )
    return key


# The most UTF-8 bytes a written item's namespace text (labels joined by ".") and key take together:
# PostgreSQL's btree index over them holds rows of at most 2,704 bytes, with the vector table's
# field path beside them. The same bound on every backend, whatever the text compresses to.
MAX_ID_BYTES = 2048


def check_item_id(namespace: tuple[str, ...], key: str) -> None:
    """Refuse a written item whose namespace text and key exceed ``MAX_ID_BYTES`` together."""
    chars = len(key) + len(namespace) + sum(map(len, namespace))
    if 4 * chars <= MAX_ID_BYTES:  # fits even at 4 bytes a character: no encoding needed
        return
    size = len(key.encode()) + len(".".join(namespace).encode())
    if size > MAX_ID_BYTES:
        raise InvalidValueError(
            f"item key and namespace take {size:,} bytes of UTF-8 together; at most"
            f" {MAX_ID_BYTES:,} can be stored (PostgreSQL indexes them)"
        )


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
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValueError(
            "item value contains a lone surrogate character, which is not valid UTF-8"
        ) from None
    return text


def _maybe_big_int(value: Any) -> bool:
    """Whether a parsed value holds a whole float beyond 64-bit range, which orjson also gives for
    an integer literal too large for 64 bits."""
    t = type(value)
    if t is float:
        return abs(value) >= 9.2e18 and value.is_integer()
    if t is not dict and t is not list:
        return False
    stack = [value]  # containers only, iteratively: stored values may nest ~1000 deep
    while stack:
        v = stack.pop()
        for x in v.values() if type(v) is dict else v:
            t = type(x)
            if t is float:
                if abs(x) >= 9.2e18 and x.is_integer():
                    return True
            elif t is dict or t is list:
                stack.append(x)
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


def check_count(name: str, value: Any) -> int:
    """A count argument (``limit``, ``offset``, ``page_size``...): an integer >= 0."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {value}")
    return value


# Row counts (``limit``, ``offset``, page sizes) above 2**40 (about 10**12, more items than any store
# holds) are served as 2**40, so that they never reach a server as a number it cannot take (a
# PostgreSQL bigint, and sums such as ``offset + limit``): a larger limit means "every match", a
# larger offset an empty page. ``max_depth`` above PostgreSQL's array subscript range (2**31 - 1) is
# that depth: no namespace has as many labels, so it truncates none.
MAX_ROWS = 2**40
MAX_DEPTH = 2**31 - 1


def check_page_size(value: Any) -> int:
    """A page size (``page_size`` of ``iter_items``, ``restore``, ``reindex``): an integer >= 1,
    at most ``MAX_ROWS`` (a larger one reads everything in one page)."""
    if check_count("page_size", value) == 0:
        raise InvalidArgumentError("page_size must be >= 1")
    return min(int(value), MAX_ROWS)


_PagedOp = TypeVar("_PagedOp", SearchOp, ListNamespacesOp)


def _check_page(op: _PagedOp) -> _PagedOp:
    """``op`` with its ``limit`` and ``offset`` checked (integers >= 0) and brought within
    ``MAX_ROWS``: a limit beyond it serves every match, an offset at or beyond it an empty page (as
    ``limit=0``, which no backend sends to its server)."""
    limit, offset = check_count("limit", op.limit), check_count("offset", op.offset)
    if offset >= MAX_ROWS:
        return op._replace(limit=0, offset=0)
    if limit > MAX_ROWS:
        return op._replace(limit=MAX_ROWS)
    return op


def validate_op_namespace(op: Op) -> None:
    """langgraph's label rules for an op, raising this package's ``InvalidNamespaceError``."""
    try:
        langgraph_validate_namespace(op)
    except LangGraphNamespaceError as exc:
        raise InvalidNamespaceError(str(exc)) from None


def validate_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """langgraph's rules for a namespace written to (not empty, no ``"langgraph"`` root, valid
    labels), as ``BaseStore.put`` applies them, raising this package's ``InvalidNamespaceError``."""
    namespace = _namespace(namespace, "namespace")
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    validate_op_namespace(
        GetOp(namespace, "")
    )  # the label rules, through langgraph's public helper
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {namespace}'
        )
    return namespace


# The longest TTL, in minutes (about 1,900 years): every backend can compute the expiry of an item
# written now with it (PostgreSQL's interval arithmetic and Redis' millisecond expiry overflow far
# beyond); ``ttl=None`` is the way to say "never".
MAX_TTL_MINUTES = 10**9


def _check_ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if not isinstance(ttl, (int, float)) or isinstance(ttl, bool):
        raise InvalidArgumentTypeError(f"ttl must be a number of minutes, got {type(ttl).__name__}")
    if not 0 < ttl <= MAX_TTL_MINUTES:  # NaN fails too
        raise InvalidArgumentError(
            f"ttl must be a positive number of minutes up to {MAX_TTL_MINUTES:,} (about 1,900"
            f" years; None: never expires), got {ttl!r}"
        )
    return float(ttl)


def _check_index(index: Any) -> None:
    if index is None or index is False:
        return
    if not isinstance(index, (list, tuple)) or not all(isinstance(p, str) and p for p in index):
        raise InvalidArgumentTypeError(
            f"index must be False, None or a list of field paths, got {index!r}"
        )


@dataclass
class Write:
    """One deduplicated put or delete: ``value_json`` is None for a delete."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None
    value_json: str | None
    index: Any
    ttl: float | None


@dataclass
class Batch:
    """A validated batch: reads by kind with their positions, and the last write per item."""

    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp, tuple[Condition, ...]]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)


def _namespace(ns: Any, what: str) -> tuple[str, ...]:
    if type(ns) is not tuple:
        if isinstance(ns, str) or not isinstance(ns, (tuple, list)):
            raise InvalidNamespaceError(f"{what} must be a tuple of strings, got {ns!r}")
        ns = tuple(ns)
    for label in ns:
        if isinstance(label, str) and not _is_utf8(label):
            raise InvalidNamespaceError(
                f"{what} label {label!r} contains a lone surrogate, which is not valid UTF-8"
            )
    return ns


_ItemOp = TypeVar("_ItemOp", GetOp, PutOp)


def item_namespace(op: _ItemOp) -> _ItemOp:
    """``op`` with its namespace checked (a tuple of valid labels)."""
    checked = _namespace(op.namespace, "namespace")
    if checked is not op.namespace:
        op = op._replace(namespace=checked)
    validate_op_namespace(op)
    return op


def check_prefix(prefix: Any) -> tuple[str, ...]:
    """A search or listing namespace prefix: a tuple (or list) of valid labels, possibly empty."""
    checked = _namespace(prefix, "namespace prefix")
    validate_op_namespace(SearchOp(checked))
    return checked


def plan_batch(ops: Iterable[Op]) -> tuple[list[Op], Batch]:
    """Validate every op and group them; raises before any I/O so a bad batch changes nothing."""
    op_list = list(ops)
    batch = Batch()
    writes: dict[tuple[tuple[str, ...], str], Write] = {}
    for i, op in enumerate(op_list):
        if isinstance(op, GetOp):
            validate_key(op.key)
            batch.gets.append((i, item_namespace(op)))
        elif isinstance(op, SearchOp):
            prefix = check_prefix(op.namespace_prefix)
            if prefix is not op.namespace_prefix:
                op = op._replace(namespace_prefix=prefix)
            op = _check_page(op)
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidArgumentTypeError(
                    f"query must be a string, got {type(op.query).__name__}"
                )
            batch.searches.append((i, op, parse_filter(op.filter)))
        elif isinstance(op, ListNamespacesOp):
            # A bare string path is one label (the official stores would split it into characters).
            op = op._replace(
                match_conditions=tuple(
                    c._replace(path=(c.path,)) if isinstance(c.path, str) else c
                    for c in op.match_conditions or ()
                )
            )
            validate_op_namespace(op)
            op = _check_page(op)
            if op.max_depth is not None:
                if check_count("max_depth", op.max_depth) == 0:
                    raise InvalidArgumentError("max_depth must be >= 1")
                if op.max_depth > MAX_DEPTH:
                    op = op._replace(max_depth=MAX_DEPTH)
            for cond in op.match_conditions or ():
                if cond.match_type not in ("prefix", "suffix"):
                    raise InvalidArgumentError(
                        f"match_type must be 'prefix' or 'suffix', got {cond.match_type!r}"
                    )
                _namespace(cond.path, "match path")
            batch.lists.append((i, op))
        elif isinstance(op, PutOp):
            validate_key(op.key)
            op = item_namespace(op)
            ns = op.namespace
            if not ns:
                raise InvalidNamespaceError("namespace cannot be empty")
            _check_index(op.index)
            if op.value is not None:  # deleting such an item is fine: it cannot exist
                check_item_id(ns, op.key)
            value_json = None if op.value is None else dump_value(op.value)
            writes[(ns, op.key)] = Write(
                ns,
                op.key,
                None if op.value is None else dict(op.value),
                value_json,
                op.index,
                _check_ttl(op.ttl),
            )
        else:
            raise InvalidArgumentTypeError(f"unknown operation type {type(op).__name__}")
    batch.writes = list(writes.values())
    return op_list, batch
