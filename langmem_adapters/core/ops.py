"""Validation and grouping of a batch of store operations, shared by every backend.

A batch is validated whole before anything runs, so bad input raises and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
from langgraph.store.base import validate_op_namespace as langgraph_validate_namespace

from langmem_adapters.core.filters import Condition, is_utf8, parse_filter
from langmem_adapters.core.values import dump_value
from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidNamespaceError,
    InvalidValueError,
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
    "item_namespace",
    "plan_batch",
    "validate_key",
    "validate_namespace",
]


def validate_key(key: Any) -> str:
    """Keys are strings without NUL characters (PostgreSQL text cannot hold NUL) or lone surrogates."""
    if not isinstance(key, str):
        raise InvalidArgumentTypeError(f"item key must be a string, got {type(key).__name__}")
    if "\x00" in key:
        raise InvalidValueError(f"item key {key!r} contains a NUL character")
    if not key.isascii() and not is_utf8(key):
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
    size = len(key.encode()) + len(".".join(namespace).encode())
    if size > MAX_ID_BYTES:
        raise InvalidValueError(
            f"item key and namespace take {size:,} bytes of UTF-8 together; at most"
            f" {MAX_ID_BYTES:,} can be stored (PostgreSQL indexes them)"
        )


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


def validate_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """langgraph's rules for a namespace written to (not empty, no ``"langgraph"`` root, valid
    labels), as ``BaseStore.put`` applies them, raising this package's ``InvalidNamespaceError``."""
    namespace = _namespace(namespace, "namespace")
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
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
    """``ns`` as a tuple of valid labels, in one pass: langgraph's label rules (as its
    ``validate_op_namespace`` applies them: strings, not empty, without ``.`` or NUL), with its
    messages, and UTF-8 (no lone surrogate)."""
    if type(ns) is not tuple:
        if isinstance(ns, str) or not isinstance(ns, (tuple, list)):
            raise InvalidNamespaceError(f"{what} must be a tuple of strings, got {ns!r}")
        ns = tuple(ns)
    for label in ns:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            _refuse_labels(ns)
        if not label.isascii() and not is_utf8(label):
            raise InvalidNamespaceError(
                f"{what} label {label!r} contains a lone surrogate, which is not valid UTF-8"
            )
    return ns


def _refuse_labels(ns: tuple[Any, ...]) -> NoReturn:
    """Raise langgraph's error (its own helper's message) for a namespace with a label it refuses."""
    try:
        langgraph_validate_namespace(GetOp(ns, ""))
    except LangGraphNamespaceError as exc:
        raise InvalidNamespaceError(str(exc)) from None
    raise InvalidNamespaceError(f"invalid namespace label in {ns!r}")


_ItemOp = TypeVar("_ItemOp", GetOp, PutOp)


def item_namespace(op: _ItemOp) -> _ItemOp:
    """``op`` with its namespace checked (a tuple of valid labels)."""
    checked = _namespace(op.namespace, "namespace")
    return op if checked is op.namespace else op._replace(namespace=checked)


def check_prefix(prefix: Any) -> tuple[str, ...]:
    """A search or listing namespace prefix: a tuple (or list) of valid labels, possibly empty."""
    return _namespace(prefix, "namespace prefix")


def _check_search(op: SearchOp) -> tuple[SearchOp, tuple[Condition, ...]]:
    """A search op with its prefix, page and query checked, and its filter parsed."""
    prefix = check_prefix(op.namespace_prefix)
    if prefix is not op.namespace_prefix:
        op = op._replace(namespace_prefix=prefix)
    op = _check_page(op)
    if op.query is not None and not isinstance(op.query, str):
        raise InvalidArgumentTypeError(f"query must be a string, got {type(op.query).__name__}")
    return op, parse_filter(op.filter)


def _check_list(op: ListNamespacesOp) -> ListNamespacesOp:
    """A namespace listing with its match conditions, page and ``max_depth`` checked."""
    # A bare string path is one label (the official stores would split it into characters).
    op = op._replace(
        match_conditions=tuple(
            c._replace(path=(c.path,)) if isinstance(c.path, str) else c
            for c in op.match_conditions or ()
        )
    )
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
        _namespace(cond.path, "match path")  # langgraph's label rules, and UTF-8
    return op


def _check_put(op: PutOp) -> Write:
    """The write of a put (or delete: ``value`` None) op, its key, namespace, value and TTL checked."""
    validate_key(op.key)
    op = item_namespace(op)
    if not op.namespace:
        raise InvalidNamespaceError("namespace cannot be empty")
    _check_index(op.index)
    if op.value is None:  # deleting an item with an over-long id is fine: it cannot exist
        return Write(op.namespace, op.key, None, None, op.index, _check_ttl(op.ttl))
    check_item_id(op.namespace, op.key)
    value_json = dump_value(op.value)
    return Write(op.namespace, op.key, dict(op.value), value_json, op.index, _check_ttl(op.ttl))


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
            batch.searches.append((i, *_check_search(op)))
        elif isinstance(op, ListNamespacesOp):
            batch.lists.append((i, _check_list(op)))
        elif isinstance(op, PutOp):
            write = _check_put(op)
            writes[(write.namespace, write.key)] = write
        else:
            raise InvalidArgumentTypeError(f"unknown operation type {type(op).__name__}")
    batch.writes = list(writes.values())
    return op_list, batch
