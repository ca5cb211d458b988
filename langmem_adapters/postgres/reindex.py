"""``reindex`` on Postgres: every item re-embedded into a shadow vector table (the next generation
of the target family, ``<prefix>_vectors_<type><dims>_g<n>``) while searches keep reading the
current one, then one transaction switching identity and table.

The position (after which namespace and key), the target identity and fields and the start time
are kept in ``<prefix>_reindexing``, committed with each page, so a rerun with the same embedder
and fields resumes. A text whose hash the shadow already holds reuses that vector: unchanged text
is embedded once, within and across pages and runs. The switch locks out writers, re-embeds the
items written since the reindex started (catch-up), renames the old table away (a plan still
naming it fails and is retried, after its store checked its identity again) and records the new
identity; the old table is dropped after the commit. The ANN index is built once, after the fill,
as a bulk load builds it (:func:`~langmem_adapters.postgres.bulk.build_index_plan`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.embedding import ItemTexts, embed_missing
from langmem_adapters.core.identity import Identity
from langmem_adapters.core.vectors import IndexSpec, extract_texts, text_hash
from langmem_adapters.postgres.bulk import build_index_plan
from langmem_adapters.postgres.schema import Tables, lexical_index_ddl, vector_ddl
from langmem_adapters.postgres.sql import (
    LIVE,
    Round,
    Statement,
    compose,
    delete_rows,
    vec_literal,
    vector_insert,
)

__all__ = ["PostgresReindex"]

Rows = Sequence[Sequence[Any]]


class PostgresReindex:
    """The plans of one reindex of a Postgres store (a :class:`~langmem_adapters.core.reindex.ReindexJob`)."""

    def __init__(
        self,
        t: Tables,
        source: IndexSpec,
        target: IndexSpec,
        identity: Identity,
        switched: Callable[[Tables, IndexSpec, Identity], None],
    ) -> None:
        """``t`` and ``source``: the store's tables and index now; ``switched`` makes the store use
        the new tables, index and identity."""
        self.t, self.source, self.target, self.identity = t, source, target, identity
        self._switched = switched
        self.shadow = Tables(t.prefix, 0)  # the real generation is chosen by ``start``
        self.done = self.total = 0
        self.retired: list[str] = []  # the tables the switch renamed away, dropped after it

    @property
    def _state(self) -> str:
        return self.t.reindexing

    def start(self) -> Steps[tuple[int, int]]:
        """Resume the reindex recorded for the same target identity and fields, or start anew (an
        earlier, different one's shadow dropped)."""
        t, family = self.t, self.t.vector_family(self.source)
        yield Round([Statement("SELECT 1", fetch=False)], tx=True)
        state, gens, count = yield Round(
            [
                Statement(
                    f"SELECT shadow, generation, identity, fields, done FROM {self._state} "
                    "WHERE source = %s FOR UPDATE",
                    [family],
                ),
                Statement(
                    f"SELECT vectors, generation FROM {t.embedders} WHERE vectors = ANY(%s)",
                    [[family, t.vector_family(self.target)]],
                ),
                Statement(f"SELECT count(*) FROM {t.store} s WHERE {LIVE.format(a='s')}"),
            ]
        )
        self.total = int(count[0][0])
        generations = {name: int(gen) for name, gen in gens}
        self.t = t = Tables(t.prefix, generations.get(family, 0))  # the current source table
        fields = list(self.target.fields)
        if state:
            shadow, gen, raw, old_fields, done = state[0]
            if Identity.from_json(raw).same_model(self.identity) and old_fields == fields:
                self.shadow, self.done = Tables(t.prefix, int(gen)), int(done)
                return self.done, self.total
            yield Round(
                [
                    Statement(f"DROP TABLE IF EXISTS {shadow}", fetch=False),
                    Statement(
                        f"DELETE FROM {self._state} WHERE source = %s", [family], fetch=False
                    ),
                ]
            )
        gen = max([t.generation, *generations.values()]) + 1
        self.shadow = Tables(t.prefix, gen)
        name = self.shadow.vectors(self.target)
        table_ddl = vector_ddl(self.shadow, self.target)[:2]  # the extension and the table
        yield Round(
            [
                *(Statement(sql, fetch=False) for sql in table_ddl),
                Statement(
                    f"CREATE INDEX IF NOT EXISTS {name}_h ON {name} (text_hash)", fetch=False
                ),
                Statement(
                    f"INSERT INTO {self._state} (source, shadow, generation, identity, fields) "
                    "VALUES (%s, %s, %s, %s::jsonb, %s::jsonb)",
                    [family, name, gen, self.identity.to_json(), json.dumps(fields)],
                    fetch=False,
                ),
            ]
        )
        self.done = 0
        return 0, self.total

    def page(self, limit: int) -> Steps[tuple[int, int] | None]:
        """The next ``limit`` live items after the recorded position, re-embedded into the shadow
        with the new position, in one transaction; ``None`` when none is left."""
        family = self.t.vector_family(self.source)
        sql = (
            f"SELECT s.ns, s.key, s.value FROM {self.t.store} s, {self._state} p "
            f"WHERE p.source = %s AND {LIVE.format(a='s')} "
            "AND (s.ns, s.key) > (p.after_ns, p.after_key) ORDER BY s.ns, s.key LIMIT %s"
        )
        (rows,) = yield Round([Statement(sql, [family, limit])])
        if not rows:
            # Filled: build the ANN index once, now (not row by row during the fill), as bulk loads do.
            shadow = self.shadow.vectors(self.target)
            if self.target.hybrid is not None:
                yield Round([Statement(d, fetch=False) for d in lexical_index_ddl(shadow)])
            yield from build_index_plan(shadow, self.target, analyze=(self.t.store,))
            return None
        statements = yield from self._embed_rows(rows)
        sql = (
            f"UPDATE {self._state} SET after_ns = %s, after_key = %s, done = done + %s "
            "WHERE source = %s"
        )
        statements.append(
            Statement(sql, [rows[-1][0], rows[-1][1], len(rows), family], fetch=False)
        )
        yield Round(statements, tx=True)
        self.done += len(rows)
        return self.done, max(self.total, self.done)

    def _embed_rows(self, rows: Rows) -> Steps[list[Statement]]:
        """Statements replacing the shadow vectors of these items (``ns, key, value`` rows), new text
        embedded with the new model, text the shadow holds reused."""
        spec = self.target
        wanted: ItemTexts = {
            (ns, key): [(f, text_hash(x), x) for f, x in extract_texts(value, spec.fields)]
            for ns, key, value in rows
        }
        hashes = sorted({h for texts in wanted.values() for _, h, _ in texts})
        shadow = self.shadow.vectors(spec)
        known: dict[str, str] = {}
        if hashes:
            sql = (
                f"SELECT DISTINCT ON (text_hash) text_hash, embedding::text FROM {shadow} "
                "WHERE text_hash = ANY(%s)"
            )
            (found,) = yield Round([Statement(sql, [hashes])])
            known = dict(found)
        vectors = yield from embed_missing(spec, wanted, known, vec_literal, spec.embeddings)
        statements = [delete_rows(shadow, [(ns, key) for ns, key, _ in rows])]
        # A hybrid store's rows keep their tsvector too.
        texts = {h: x for rows in wanted.values() for _, h, x in rows} if spec.hybrid else None
        insert = vector_insert(shadow, spec, vectors, texts)
        if insert is not None:
            live = f"JOIN {self.t.store} s ON s.ns = r.ns AND s.key = r.key"
            statements.append(compose(insert, live).statement(fetch=False))
        return statements

    def finish(self) -> list[Callable[[], Steps[None]]]:
        """The switch, then the old table dropped."""
        return [self._switch, self._drop_old]

    def _switch(self) -> Steps[None]:
        """One transaction: writers locked out, items written since the start re-embedded, the old table renamed away, the new identity recorded, the position dropped."""
        t, target = self.t, self.target
        family, shadow = t.vector_family(self.source), self.shadow.vectors(target)
        yield Round(
            [Statement(f"LOCK TABLE {t.store} IN SHARE ROW EXCLUSIVE MODE", fetch=False)], tx=True
        )
        sql = (
            f"SELECT s.ns, s.key, s.value FROM {t.store} s, {self._state} p "
            f"WHERE p.source = %s AND {LIVE.format(a='s')} AND s.updated_at >= p.started_at"
        )
        (rows,) = yield Round([Statement(sql, [family])])
        catch_up = (yield from self._embed_rows(rows)) if rows else []
        (recorded,) = yield Round([Statement(f"SELECT vectors, generation FROM {t.embedders}")])
        # Every current table of the prefix goes (the store's items now live in the new one alone):
        # the source's, and those of other sizes an identity names.
        self.retired = sorted(
            {t.vectors(self.source)}
            | {name if not gen else f"{name}_g{gen}" for name, gen in recorded}
        )
        yield Round(
            [
                *catch_up,
                Statement(f"DROP INDEX IF EXISTS {shadow}_h", fetch=False),
                *(
                    Statement(f"ALTER TABLE IF EXISTS {old} RENAME TO {old}_retired", fetch=False)
                    for old in self.retired
                    if old != shadow
                ),
                Statement(f"DELETE FROM {t.embedders}", fetch=False),
                Statement(
                    f"INSERT INTO {t.embedders} (vectors, identity, generation) "
                    "VALUES (%s, %s::jsonb, %s)",
                    [t.vector_family(target), self.identity.to_json(), self.shadow.generation],
                    fetch=False,
                ),
                Statement(f"DELETE FROM {self._state} WHERE source = %s", [family], fetch=False),
            ]
        )

    def _drop_old(self) -> Steps[None]:
        """Drop the retired tables (a foreign key's removal needs a short lock of the items table)
        and their copies of word statistics."""
        gone = [old for old in self.retired if old != self.shadow.vectors(self.target)]
        yield Round(
            [Statement(f"DROP TABLE IF EXISTS {old}_retired", fetch=False) for old in self.retired]
            + [Statement(f"DELETE FROM {self.t.terms} WHERE tbl = ANY(%s)", [gone], fetch=False)]
        )

    def switch(self) -> None:
        """The store takes on the new tables, index and identity."""
        self._switched(self.shadow, self.target, self.identity)
