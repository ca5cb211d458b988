"""Where the Postgres stores keep embedder identities: the ``<prefix>_embedders`` table, one row per
vector table family (vector type + dims, shared by the stores of a prefix) with the generation of
its current table (see :mod:`langmem_adapters.core.identity` for the rules).
"""

from __future__ import annotations

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.identity import Identity, Recorded
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.postgres.backfill import backfill_plan
from langmem_adapters.postgres.schema import Tables, index_tables_ddl, setup_plan, vector_ddl
from langmem_adapters.postgres.sql import Round, Statement

__all__ = ["PostgresIdentity", "setup_steps"]


class PostgresIdentity:
    """The identities of one prefix's vector tables (an :class:`~langmem_adapters.core.identity.IdentityAccess`)."""

    def __init__(self, t: Tables, spec: IndexSpec) -> None:
        self.tables = t
        self.name = t.vector_family(spec)

    def read(self) -> Steps[dict[str, Recorded]]:
        """Every identity recorded on the prefix, by vector table family."""
        (rows,) = yield Round(
            [Statement(f"SELECT vectors, identity, generation FROM {self.tables.embedders}")]
        )
        return {name: Recorded(Identity.from_json(raw), int(gen)) for name, raw, gen in rows}

    def record(self, identity: Identity, generation: int) -> Steps[Recorded]:
        """Record ``identity`` for this family's table at ``generation`` unless a racing store did
        first; the one recorded."""
        _, rows = yield Round(
            [
                Statement(
                    f"INSERT INTO {self.tables.embedders} (vectors, identity, generation) "
                    "VALUES (%s, %s::jsonb, %s) ON CONFLICT (vectors) DO NOTHING",
                    [self.name, identity.to_json(), generation],
                    fetch=False,
                ),
                Statement(
                    f"SELECT identity, generation FROM {self.tables.embedders} WHERE vectors = %s",
                    [self.name],
                ),
            ]
        )
        raw, gen = rows[0]
        return Recorded(Identity.from_json(raw), int(gen))


def setup_steps(t: Tables, spec: IndexSpec | None) -> Steps[Tables]:
    """``setup()``: the schema and its migrations, then the vector table and ANN index of the
    family's current generation (one transaction, under the setup lock), and for a hybrid store the
    ``tsv`` of rows that lack it (:func:`~langmem_adapters.postgres.backfill.backfill_plan`); the
    tables to use."""
    yield from setup_plan(t, None)
    if spec is None:
        return t
    yield Round([Statement(sql, fetch=False) for sql in index_tables_ddl(t)])
    # The generation of the family's current vector table (0 when none is recorded).
    sql = f"SELECT generation FROM {t.embedders} WHERE vectors = %s"
    (rows,) = yield Round([Statement(sql, [t.vector_family(spec)])])
    t = Tables(t.prefix, int(rows[0][0]) if rows else 0)
    yield Round([Statement(sql, fetch=False) for sql in vector_ddl(t, spec)])
    if spec.hybrid is not None:
        yield from backfill_plan(t, spec, spec.hybrid)
    return t
