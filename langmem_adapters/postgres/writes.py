"""The write statements of the Postgres stores: deletes and upserts (of a batch, or of a restore page
keeping its timestamps), the vectors that go with them, TTL refresh and the expiry sweep.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langmem_adapters.core import namespaces as nsp
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import embed_missing, texts_to_embed
from langmem_adapters.core.ops import Write
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import (
    KEY,
    LIVE,
    Round,
    Statement,
    compose,
    delete_rows,
    keep_floats,
    row_source,
    vec_literal,
    vector_insert,
)

__all__ = [
    "ItemVectors",
    "Stamps",
    "refresh_statement",
    "sweep_plan",
    "write_statements",
    "write_vectors",
]

ItemVectors = dict[tuple[str, str], list[tuple[str, str, str]]]
"""Per item ``(namespace text, key)``: its ``(field, text hash, vector literal)`` rows to store."""

Stamps = tuple[datetime, datetime, datetime | None]
"""What a restored item keeps as it was: ``created_at``, ``updated_at`` and ``expires_at``."""

_EXPIRED = "s.expires_at IS NOT NULL AND s.expires_at <= now()"
_REPLACE = (
    "DO UPDATE SET value = excluded.value, created_at = excluded.created_at, "
    "updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
    "ttl_minutes = excluded.ttl_minutes"
)
_CONFLICT = {
    # A put keeps the live item's created_at (a new one if the old item had expired).
    "put": f"DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
    f"created_at = CASE WHEN {_EXPIRED} THEN excluded.created_at ELSE s.created_at END, "
    f"expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes",
    # put_if_absent replaces only an expired item, and says whether it wrote.
    "if_absent": f"{_REPLACE} WHERE {_EXPIRED} RETURNING s.ns, s.key",
    # A restore writes the record as it was.
    "restore": _REPLACE,
}


def write_vectors(t: Tables, spec: IndexSpec, writes: list[Write]) -> Steps[ItemVectors]:
    """Vectors for each put, reusing stored embeddings of unchanged text (read for the items
    written, by text hash); only new text is embedded."""
    wanted = texts_to_embed(spec, writes)
    keys = [k for k, rows in wanted.items() if rows]
    known: dict[str, str] = {}
    if keys:
        source, params = row_source(KEY, keys)
        sql = (
            f"SELECT v.ns, v.key, v.text_hash, v.embedding::text FROM {t.vectors(spec)} v "
            f"JOIN {source} ON v.ns = r.ns AND v.key = r.key"
        )
        (stored,) = yield Round([Statement(sql, params)])
        known = {h: emb for _, _, h, emb in stored}
    return (yield from embed_missing(spec, wanted, known, vec_literal))


def write_statements(
    t: Tables,
    spec: IndexSpec | None,
    writes: list[Write],
    vectors: ItemVectors,
    *,
    if_absent: bool = False,
    stamps: Mapping[tuple[str, str], Stamps] | None = None,
) -> tuple[list[Statement], list[Statement]]:
    """Item statements (deletes, namespace registration, upserts) and the vector replacement after
    them. ``if_absent``: the upsert writes only over an expired item and returns the row it wrote
    (``put_if_absent``). With ``stamps`` (per item key) the puts are a restore's: each item gets
    exactly those timestamps and expiry (with its ``ttl``) instead of ``now()``-based ones."""
    # One lock order for every statement (the stored text order): concurrent batches cannot deadlock.
    writes = sorted(writes, key=lambda w: (nsp.join(w.namespace), w.key))
    deletes = [w for w in writes if w.value_json is None]
    puts = [w for w in writes if w.value_json is not None]
    deleted = [(nsp.join(w.namespace), w.key) for w in deletes]
    statements = [delete_rows(t.store, deleted)] if deletes else []  # their vectors cascade
    if not puts:
        return statements, []
    conflict = _CONFLICT["restore" if stamps is not None else "if_absent" if if_absent else "put"]
    statements.append(_upsert_statement(t, puts, conflict, stamps, fetch=if_absent))
    if spec is None:
        return statements, []
    texts = None
    if spec.hybrid is not None:  # the lexical side is parsed from the texts the vectors embed
        texts = {h: x for rows in texts_to_embed(spec, puts).values() for _, h, x in rows}
    put_keys = [(nsp.join(w.namespace), w.key) for w in puts]
    return statements, _vector_statements(t, spec, put_keys, vectors, texts)


def _upsert_statement(
    t: Tables,
    puts: list[Write],
    conflict: str,
    stamps: Mapping[tuple[str, str], Stamps] | None,
    *,
    fetch: bool,
) -> Statement:
    """Register the puts' namespaces and upsert their items (``conflict``: what a key already
    present gets), with ``now()``-based timestamps and expiry, or a restore's ``stamps``."""
    values: list[tuple[Any, ...]] = [
        (nsp.join(w.namespace), w.key, keep_floats(w.value_json or ""), w.ttl) for w in puts
    ]
    # One shape for one put or many: a plain VALUES statement for a single put saved -5% to +10%.
    columns = [*KEY, ("value", "jsonb"), ("ttl", "float8")]
    rows_sql = "SELECT ns, key, value, now(), now(), now() + ttl * interval '1 minute', ttl"
    if stamps is not None:
        columns += [("c", "timestamptz"), ("u", "timestamptz"), ("x", "timestamptz")]
        values = [(*row, *stamps[(row[0], row[1])]) for row in values]
        rows_sql = "SELECT ns, key, value, c, u, x, ttl"
    source, params = row_source(columns, values)
    return Statement(
        f"WITH rows AS (SELECT * FROM {source}), new_ns AS ("
        # Only namespaces not yet registered reach the insert (most batches write to known ones).
        f"INSERT INTO {t.namespaces} (ns, labels, depth) "
        "SELECT ns, string_to_array(ns, '.'), cardinality(string_to_array(ns, '.')) "
        f"FROM (SELECT DISTINCT ns FROM rows) d WHERE NOT EXISTS "
        f"(SELECT 1 FROM {t.namespaces} n WHERE n.ns = d.ns) ORDER BY ns "
        "ON CONFLICT (ns) DO NOTHING) "
        f"INSERT INTO {t.store} AS s "
        "(ns, key, value, created_at, updated_at, expires_at, ttl_minutes) "
        f"{rows_sql} FROM rows ON CONFLICT (ns, key) {conflict}",
        params,
        fetch=fetch,
    )


def _vector_statements(
    t: Tables,
    spec: IndexSpec,
    put_keys: list[tuple[str, str]],
    vectors: ItemVectors,
    texts: Mapping[str, str] | None,
) -> list[Statement]:
    """Replace the put items' vectors: drop fields they no longer index, upsert changed text. With
    ``texts`` (by text hash: a hybrid store) each row also gets its ``tsvector``, in the same
    statement, so the lexical side changes in the item's transaction."""
    vt = t.vectors(spec)
    vector_statements: list[Statement] = []
    keep = [(ns, key, field) for (ns, key), rows in vectors.items() for field, _, _ in rows]
    source, params = row_source(KEY, put_keys)
    stale = f"DELETE FROM {vt} v USING {source} WHERE v.ns = r.ns AND v.key = r.key"
    if keep:
        kept, kept_params = row_source((*KEY, ("field", "text")), keep)
        stale += f" AND (v.ns, v.key, v.field) NOT IN (SELECT r.ns, r.key, r.field FROM {kept})"
        params += kept_params
    vector_statements.append(Statement(stale, params, fetch=False))
    insert = vector_insert(vt, spec, vectors, texts)
    if insert is not None:
        tsv_set, tsv_stale = ", tsv = NULL", ""  # changed text: a non-hybrid store drops its words
        if texts is not None:
            # Unchanged text keeps its row (and tsvector), unless a non-hybrid store left it NULL.
            tsv_set, tsv_stale = ", tsv = excluded.tsv", " OR v.tsv IS NULL"
        conflict = (
            "ON CONFLICT (ns, key, field) DO UPDATE "
            f"SET text_hash = excluded.text_hash, embedding = excluded.embedding{tsv_set} "
            f"WHERE v.text_hash <> excluded.text_hash{tsv_stale}"
        )
        vector_statements.append(compose(insert, conflict).statement(fetch=False))
    return vector_statements


def refresh_statement(t: Tables, keys: list[tuple[str, str]]) -> Statement:
    """Extend each read item's expiry by its own TTL.

    Best effort and never blocking: rows are locked in key order and rows another transaction holds
    are skipped (that writer sets a fresh expiry itself), so concurrent refreshes cannot deadlock.
    """
    source, params = row_source(KEY, keys)
    return Statement(
        f"WITH due AS (SELECT s.ns, s.key FROM {t.store} s JOIN {source} ON s.ns = r.ns AND s.key = r.key "
        f"WHERE s.ttl_minutes IS NOT NULL AND {LIVE.format(a='s')} "
        f"ORDER BY s.ns, s.key FOR UPDATE OF s SKIP LOCKED) "
        f"UPDATE {t.store} s SET expires_at = now() + s.ttl_minutes * interval '1 minute' "
        f"FROM due WHERE s.ns = due.ns AND s.key = due.key",
        params,
        fetch=False,
    )


def sweep_plan(t: Tables) -> Steps[int]:
    """Delete expired items; then, under a short table lock that waits out in-flight writers, drop
    namespace rows that no longer hold any item. Returns how many items went."""
    sql = f"DELETE FROM {t.store} WHERE expires_at IS NOT NULL AND expires_at <= now() RETURNING 1"
    (expired,) = yield Round([Statement(sql)])
    yield Round(
        [
            Statement(f"LOCK TABLE {t.namespaces} IN SHARE ROW EXCLUSIVE MODE", fetch=False),
            Statement(
                f"DELETE FROM {t.namespaces} n WHERE NOT EXISTS (SELECT 1 FROM {t.store} s WHERE s.ns = n.ns)",
                fetch=False,
            ),
        ],
        tx=True,
    )
    return len(expired)
