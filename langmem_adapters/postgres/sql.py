"""The SQL building blocks every Postgres plan uses: statements and rounds, row sources, the
namespace and filter conditions, literals and the shared column lists.

A plan (see :mod:`langmem_adapters.postgres.plan`) yields ``Round`` requests: statements sent
together in one pipeline; the sync and async stores only differ in how they execute a round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from langgraph.store.base import SearchItem

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.filters import COMPARISONS, Condition
from langmem_adapters.core.items import make_search_item
from langmem_adapters.core.vectors import IndexSpec

__all__ = [
    "DISTANCE_OPERATOR",
    "ITEM_COLUMNS",
    "KEY",
    "LIVE",
    "TRUE",
    "Answer",
    "ItemRow",
    "Request",
    "Round",
    "Sql",
    "Statement",
    "VectorRow",
    "compose",
    "delete_rows",
    "filter_sql",
    "keep_floats",
    "ns_condition",
    "row_source",
    "search_item_of",
    "tsvector_sql",
    "vec_literal",
    "vector_insert",
]


class Statement(NamedTuple):
    """One SQL statement; ``fetch`` says whether its rows are wanted."""

    sql: str
    params: Sequence[Any] = ()
    fetch: bool = True


class Sql(NamedTuple):
    """A fragment of SQL text with the parameters of its placeholders, in order. Fragments are
    joined with :func:`compose`, so a parameter always travels with the text that uses it."""

    text: str
    params: Sequence[Any] = ()

    def statement(self, *, fetch: bool = True) -> Statement:
        """This fragment as a whole statement."""
        return Statement(self.text, list(self.params), fetch)


#: A condition every row passes.
TRUE = Sql("TRUE")


def compose(*parts: Sql | str) -> Sql:
    """``parts`` joined by spaces, with their parameters in the same order (a string: plain text)."""
    texts: list[str] = []
    params: list[Any] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        else:
            texts.append(part.text)
            params += part.params
    return Sql(" ".join(texts), params)


class ItemRow(NamedTuple):
    """A row read with ``ITEM_COLUMNS``."""

    ns: str
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None


class VectorRow(NamedTuple):
    """A vector search's row: ``ITEM_COLUMNS``, then the distance of the item's (nearest) vector."""

    ns: str
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None
    distance: float


class Round(NamedTuple):
    """Statements sent in one round trip (one pipeline, hence one implicit transaction).

    ``tx`` opens an explicit transaction that lasts until the plan ends, for plans whose rounds must
    commit together (setup under its advisory lock, ``put_if_absent`` with its vectors, a restore page).
    ``writes`` marks a round that writes inside a plan that otherwise only reads (a TTL refresh, the
    lexical terms copy): a store with read replicas sends it to the primary (plans that write as a
    whole run there anyway, see :mod:`~langmem_adapters.postgres.replicas`).
    """

    statements: list[Statement]
    tx: bool = False
    writes: bool = False


Request = Embed | Round
"""What a Postgres plan yields: texts to embed, or a round of SQL."""
Answer = list[list[Any]]
"""What a plan is sent back: a round's rows per statement (none for those that do not fetch), or
an ``Embed``'s vectors."""

#: pgvector's distance operator by ``IndexSpec.distance``.
DISTANCE_OPERATOR = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}
#: A live item (never expires, or not yet expired), for the items table aliased ``{a}``.
LIVE = "({a}.expires_at IS NULL OR {a}.expires_at > now())"
#: The columns an ``Item`` is read from (``ItemRow``), for the items table aliased ``{a}``.
ITEM_COLUMNS = "{a}.ns, {a}.key, {a}.value, {a}.created_at, {a}.updated_at, {a}.ttl_minutes"
#: The columns of an item's key in a row source.
KEY = (("ns", "text"), ("key", "text"))


def ns_condition(
    column: str, prefix: Sequence[str], *, estimable: bool = False
) -> tuple[str, list[Any]]:
    """Exact-or-below match on whole labels, as index ranges (no LIKE, nothing to escape).

    By default one range ``[p, p + "/")``, which holds ``p``, ``p.``-prefixed names and names that
    continue ``p`` with a character sorting before ``"/"``, plus a check of the character after ``p``
    that keeps the first two: a prepared statement then settles on a generic plan instead of being
    planned again on every call. ``estimable`` gives ``p`` or ``[p., p/)`` instead, whose row
    estimate the planner can trust (the vector query chooses between the ANN index and the ranges).
    """
    if not prefix:
        return "TRUE", []
    base = nsp.join(prefix)
    lo, hi = nsp.prefix_range(prefix)
    if estimable:
        return f"({column} = %s OR ({column} >= %s AND {column} < %s))", [base, lo, hi]
    return (
        f"({column} >= %s AND {column} < %s AND "
        f"(length({column}) = %s OR substr({column}, %s + 1, 1) = %s))",
        [base, hi, len(base), len(base), lo[-1]],
    )


def filter_sql(conditions: Iterable[Condition], column: str) -> tuple[str, list[Any]]:
    """Typed filter conditions as SQL (see ``langmem_adapters.core.filters`` for the semantics)."""
    parts: list[str] = []
    params: list[Any] = []
    for c in conditions:
        # A value is always an object, so a one-key path is its field: "->" finds it faster than
        # "#>" (measured ~10% off a filtered search).
        x = f"({column} -> %s::text)" if len(c.path) == 1 else f"({column} #> %s::text[])"
        path: str | list[str] = c.path[0] if len(c.path) == 1 else list(c.path)
        if c.op == "$eq":
            parts.append(f"{x} = %s::jsonb")
            params += [path, json.dumps(c.value)]
        elif c.op == "$ne":
            parts.append(f"{x} IS DISTINCT FROM %s::jsonb")
            params += [path, json.dumps(c.value)]
        elif c.op == "$in":
            parts.append(f"{x} IN (SELECT jsonb_array_elements(%s::jsonb))")
            params += [path, json.dumps(list(c.value))]
        elif c.op == "$nin":
            parts.append(f"({x} IS NULL OR {x} NOT IN (SELECT jsonb_array_elements(%s::jsonb)))")
            params += [path, path, json.dumps(list(c.value))]
        elif c.op == "$exists":
            parts.append(f"{x} IS {'NOT ' if c.value else ''}NULL")
            params.append(path)
        else:
            assert c.op in COMPARISONS
            sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[c.op]
            if isinstance(c.value, str):
                parts.append(
                    f"(jsonb_typeof({x}) = 'string' AND ({x} #>> '{{}}') COLLATE \"C\" {sql_op} %s)"
                )
                params += [path, path, c.value]
            else:
                parts.append(f"(jsonb_typeof({x}) = 'number' AND {x} {sql_op} %s::jsonb)")
                params += [path, path, json.dumps(c.value)]
    return (" AND ".join(parts) or "TRUE"), params


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?[eE]\+\d+')


def keep_floats(value_json: str) -> str:
    """Write large whole floats (``1e+16``) as ``10000000000000000.0``: jsonb would otherwise expand
    them to integer digits and they would come back as ``int``."""
    if "e+" not in value_json and "E+" not in value_json:
        return value_json

    def fix(m: re.Match[str]) -> str:
        token = m.group(0)
        return token if token.startswith('"') else f"{int(float(token))}.0"

    return _JSON_TOKEN.sub(fix, value_json)


def row_source(
    columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """A row source ``r(col, ...)``: scalar parameters for one row (so the statement gets a stable,
    cached plan), or for many one JSON array of rows that the server unpacks (one statement for any
    batch size, and far cheaper to send than a parameter per cell or array parameters).

    Column types are ``text``, ``float8``, ``timestamptz`` or ``jsonb``; a ``jsonb`` cell is given as
    JSON text, a ``timestamptz`` one as an aware ``datetime``."""
    if len(rows) == 1:  # built every time: caching this text measured -9% to +8%
        cells = ", ".join([f"%s::{type_} AS {name}" for name, type_ in columns])
        return f"(SELECT {cells}) AS r", list(rows[0])
    names = ", ".join([name for name, _ in columns])
    for i, (_, type_) in enumerate(columns):
        if type_ == "jsonb":  # JSON text already: embedded as it is
            rows = [(*row[:i], orjson.Fragment(row[i]), *row[i + 1 :]) for row in rows]
    carrier = orjson.dumps(rows).decode()
    picks = ", ".join(
        f"j.r->{i}"
        if type_ == "jsonb"
        else f"j.r->>{i}"
        if type_ == "text"
        else f"(j.r->>{i})::{type_}"
        for i, (_, type_) in enumerate(columns)
    )
    return (
        f"(SELECT {picks} FROM jsonb_array_elements(%s::jsonb) AS j(r)) AS r({names})",
        [carrier],
    )


def delete_rows(table: str, keys: Sequence[tuple[str, str]]) -> Statement:
    """Delete the rows of ``table`` (the items table, or a vector table) of these items
    (``(namespace text, key)``)."""
    source, params = row_source(KEY, keys)
    sql = f"DELETE FROM {table} d USING {source} WHERE d.ns = r.ns AND d.key = r.key"
    return Statement(sql, params, fetch=False)


def tsvector_sql(config: str, text: str) -> str:
    """The ``tsvector`` of the SQL expression ``text`` under text-search configuration ``config``:
    how vector rows keep their words and how query text is parsed, one spelling for both."""
    return f"to_tsvector('{config}'::regconfig, {text})"


def vector_insert(
    table: str,
    spec: IndexSpec,
    vectors: Mapping[tuple[str, str], Sequence[tuple[str, str, str]]],
    texts: Mapping[str, str] | None,
) -> Sql | None:
    """The insert of items' vectors (``field, text hash, vector literal`` by item) into the vector
    table ``table`` (aliased ``v``), from the rows ``r`` (``None``: there are none); the caller adds
    what follows (a join, ``ON CONFLICT``). With the ``texts`` by hash (a hybrid store's write),
    each row's ``tsvector`` too, computed in the same statement."""
    rows = [(ns, key, f, h, v) for (ns, key), got in vectors.items() for f, h, v in got]
    if not rows:
        return None
    columns = [*KEY, ("field", "text"), ("h", "text"), ("e", "text")]
    cells: list[tuple[str, ...]] = list(rows)
    tsv = tsv_value = ""
    if spec.hybrid is not None and texts is not None:
        columns.append(("x", "text"))
        cells = [(*row, texts[row[3]]) for row in rows]
        tsv, tsv_value = ", tsv", f", {tsvector_sql(spec.hybrid.text_config, 'r.x')}"
    source, params = row_source(columns, cells)
    return Sql(
        f"INSERT INTO {table} AS v (ns, key, field, text_hash, embedding{tsv}) "
        f"SELECT r.ns, r.key, r.field, r.h, r.e::{spec.vector_type}{tsv_value} FROM {source}",
        params,
    )


def vec_literal(v: Sequence[float]) -> str:
    """pgvector's text form ``[x,y,...]`` (checked, finite floats: orjson writes exactly that)."""
    return orjson.dumps(v).decode()


def search_item_of(row: Sequence[Any], score: float | None) -> SearchItem:
    """The ``SearchItem`` of a row read with ``ITEM_COLUMNS``, with its score."""
    ns, key, value, created_at, updated_at = row[:5]
    return make_search_item(nsp.split(ns), key, value, created_at, updated_at, score)
