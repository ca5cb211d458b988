"""Namespace-wide operations on Postgres: the plans of ``count`` and ``delete_namespace``.

Both match whole labels with the same index ranges as searches (:func:`~langmem_adapters.postgres.sql.ns_condition`),
so ``("users", "ada")`` never reaches ``("users", "adam")``. A delete runs in one transaction under
the namespace registry's table lock (as the expiry sweep does): writers in flight finish first and
new ones wait, so a namespace created meanwhile under the prefix is either deleted whole or written
after the delete, never left half-registered. Vector rows go with their items (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import LIVE, Round, Statement, filter_sql, ns_condition

__all__ = ["count_plan", "delete_namespace_plan"]


def count_plan(t: Tables, prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> Steps[int]:
    """The number of live items at or below ``prefix`` whose values match ``conditions``."""
    ns_sql, ns_params = ns_condition("s.ns", prefix)
    where, params = filter_sql(conditions, "s.value")
    sql = f"SELECT count(*) FROM {t.store} s WHERE {ns_sql} AND {LIVE.format(a='s')} AND {where}"
    (rows,) = yield Round([Statement(sql, [*ns_params, *params])])
    return int(rows[0][0])


def delete_namespace_plan(t: Tables, prefix: tuple[str, ...]) -> Steps[int]:
    """Delete every item at or below ``prefix`` (their vectors cascade) and the namespaces' registry
    rows, in one transaction; returns how many of the deleted items were live."""
    item_sql, item_params = ns_condition("s.ns", prefix)
    ns_sql, ns_params = ns_condition("n.ns", prefix)
    _, rows, _ = yield Round(
        [
            Statement(f"LOCK TABLE {t.namespaces} IN SHARE ROW EXCLUSIVE MODE", fetch=False),
            Statement(
                f"WITH gone AS (DELETE FROM {t.store} s WHERE {item_sql} RETURNING s.expires_at) "
                f"SELECT count(*) FROM gone s WHERE {LIVE.format(a='s')}",
                item_params,
            ),
            Statement(f"DELETE FROM {t.namespaces} n WHERE {ns_sql}", ns_params, fetch=False),
        ],
        tx=True,
    )
    return int(rows[0][0])
