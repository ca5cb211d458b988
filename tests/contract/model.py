"""A small reference model of the store semantics, for property tests.

It is deliberately naive (a dict and list comprehensions) so that it is easy to trust; it reuses
the shared filter and namespace-match functions whose own behaviour is pinned by the contract suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from langmem_adapters.core.filters import matches, parse_filter
from langmem_adapters.core.namespaces import join, matches_all


@dataclass
class Model:
    """Items by (namespace, key) with a logical write clock for newest-first ordering."""

    items: dict[tuple[tuple[str, ...], str], tuple[int, dict[str, Any]]] = field(
        default_factory=dict
    )
    clock: int = 0

    def apply(self, op: Op) -> Any:
        """The expected result of one op run alone in its own batch."""
        if isinstance(op, PutOp):
            self.clock += 1
            k = (tuple(op.namespace), op.key)
            if op.value is None:
                self.items.pop(k, None)
            else:
                self.items[k] = (self.clock, dict(op.value))
            return None
        if isinstance(op, GetOp):
            found = self.items.get((tuple(op.namespace), op.key))
            return None if found is None else found[1]
        if isinstance(op, SearchOp):
            prefix = tuple(op.namespace_prefix)
            conds = parse_filter(op.filter)
            hits = [
                (clock, ns, key, value)
                for (ns, key), (clock, value) in self.items.items()
                if ns[: len(prefix)] == prefix and matches(value, conds)
            ]
            hits.sort(key=lambda h: (-h[0], join(h[1]), h[2]))
            return [(h[1], h[2], h[3]) for h in hits[op.offset : op.offset + op.limit]]
        assert isinstance(op, ListNamespacesOp)
        found = {ns for ns, _ in self.items if matches_all(ns, op.match_conditions)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]
