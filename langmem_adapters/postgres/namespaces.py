"""Namespace-wide operations on Postgres: the plans of ``count`` and ``delete_namespace``, and the
statement of ``list_namespaces``.

Both match whole labels with the same index ranges as searches (:func:`~langmem_adapters.postgres.sql.ns_condition`),
so ``("users", "ada")`` never reaches ``("users", "adam")``. A delete runs in one transaction under
the namespace registry's table lock (as the expiry sweep does): writers in flight finish first and
new ones wait, so a namespace created meanwhile under the prefix is either deleted whole or written
after the delete, never left half-registered. Vector rows go with their items (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from itertools import takewhile
from typing import Any

from langgraph.store.base import ListNamespacesOp

from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.postgres.sql import LIVE, Round, Statement, filter_sql, ns_condition

__all__ = ["count_plan", "delete_namespace_plan", "list_statement"]


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


def list_statement(t: Tables, op: ListNamespacesOp) -> Statement:
    """``list_namespaces``: registered namespaces matching the conditions that hold a live item."""
    conds = ["TRUE"]
    params: list[Any] = []
    for cond in op.match_conditions or ():
        path = tuple(cond.path)
        conds.append(f"n.depth >= {len(path)}")
        if cond.match_type == "prefix":
            lead = tuple(takewhile(lambda label: label != "*", path))
            sql, p = ns_condition("n.ns", lead)
            conds.append(sql)
            params += p
            for i, label in enumerate(path[len(lead) :], start=len(lead) + 1):
                if label != "*":
                    conds.append(f"n.labels[{i}] = %s")
                    params.append(label)
        else:
            for i, label in enumerate(path):
                if label != "*":
                    conds.append(f"n.labels[n.depth - {len(path) - 1 - i}] = %s")
                    params.append(label)
    cols = "n.labels" if op.max_depth is None else f"n.labels[1:{int(op.max_depth)}]"
    return Statement(
        # One primary-key probe per candidate namespace for its first live item (LATERAL, in key
        # order, LIMIT 1), never a scan of the items table.
        f"SELECT DISTINCT {cols} AS labels FROM {t.namespaces} n "
        f"CROSS JOIN LATERAL (SELECT 1 FROM {t.store} s WHERE s.ns = n.ns AND {LIVE.format(a='s')} "
        f"ORDER BY s.ns, s.key LIMIT 1) live "
        f"WHERE {' AND '.join(conds)} "
        f"ORDER BY labels LIMIT %s OFFSET %s",
        [*params, op.limit, op.offset],
    )
