"""What the sync and async Postgres stores share (:class:`PostgresBackend`): the tables (at the
current vector generation), the plans built on them, the replicas' routing, and the hooks the
store's parts are made with (its search stats, its probe, its bulk-load and reindex plans)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from langgraph.store.base import Op, PutOp, Result, TTLConfig

from langmem_adapters.core.calibrated import Tuning
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.identity import Identity, guarded
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.store import ItemsPage, Store
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.errors import TransientServerError
from langmem_adapters.postgres.bulk import build_index_plan, drop_if_empty_plan
from langmem_adapters.postgres.export import items_plan, restore_plan
from langmem_adapters.postgres.identity import PostgresIdentity
from langmem_adapters.postgres.namespaces import count_plan, delete_namespace_plan
from langmem_adapters.postgres.opening import PostgresIndexConfig, address
from langmem_adapters.postgres.plan import plan, put_if_absent_plan
from langmem_adapters.postgres.probe import PostgresProbe
from langmem_adapters.postgres.reindex import PostgresReindex
from langmem_adapters.postgres.replicas import ReadStats, Replica, Routing
from langmem_adapters.postgres.schema import Tables, check_ann
from langmem_adapters.postgres.search import COLD, EF_SEARCH, EXACT_BELOW
from langmem_adapters.postgres.stats import PostgresStats

__all__ = ["PostgresBackend"]

R = TypeVar("R")


class PostgresBackend(Store[PostgresStats]):
    """The ``Store`` both Postgres stores derive from (each with its driver): the tables, the plans
    built on them, the replicas' routing, and the hooks the store's parts are made with."""

    tables: Tables
    _routing: Routing[Any] | None
    # The server rolled the whole batch back (connection.TRANSIENT): running it again is safe.
    _retryable: tuple[type[Exception], ...] = (TransientServerError,)
    _tuning = Tuning(EF_SEARCH, EXACT_BELOW, COLD)

    def _new_stats(self) -> PostgresStats:
        """Fresh search stats for the current index (measured anew)."""
        return PostgresStats(calibration=self._calibration.calibrator(self.index_spec))

    def _prepare(
        self,
        index: PostgresIndexConfig | None,
        ttl: TTLConfig | None,
        table_prefix: str,
        replicas: list[Replica[Any]],
        retry: float,
    ) -> None:
        """What both constructors do before any I/O: configure, check the ANN options, name the
        tables, make the search stats and route reads to ``replicas`` (no routing without any)."""
        self._configure(index, ttl)
        check_ann(self.index_spec)
        self.tables = Tables(table_prefix)
        self._stats = self._new_stats()
        self._routing = Routing(replicas, retry=retry) if replicas else None

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Steps[list[Result] | bool]:
        """The batch plan (:func:`~langmem_adapters.postgres.plan.plan`) on this store's tables,
        behind the embedder identity check."""
        ops = list(ops)
        return guarded(
            self._guard,
            self.index_spec,
            self._identity_access,
            lambda: (
                put_if_absent_plan(self._current_tables(), self.index_spec, cast(PutOp, ops[0]))
                if if_absent
                else plan(self._current_tables(), self.index_spec, ops, stats=self._stats)
            ),
            ops,
        )

    def _guarded(self, build: Callable[[], Steps[R]], ops: list[Op] | None = None) -> Steps[R]:
        """The plan ``build`` makes, behind this store's embedder identity check
        (:func:`~langmem_adapters.core.identity.guarded`)."""
        return guarded(self._guard, self.index_spec, self._identity_access, build, ops)

    def _reindex_job(self, target: IndexSpec, identity: Identity) -> PostgresReindex:
        """The plans re-embedding this store into ``target`` (see :meth:`reindex`)."""
        assert self.index_spec is not None
        return PostgresReindex(self.tables, self.index_spec, target, identity, self._switched)

    def _switched(self, tables: Tables, spec: IndexSpec, identity: Identity) -> None:
        """After a reindex switched: the new vector tables, index and identity from now on."""
        self.tables = tables
        self._adopt(spec, identity, tables.generation)

    def _identity_access(self) -> PostgresIdentity:
        """Where this store's embedder identity is recorded."""
        assert self.index_spec is not None
        return PostgresIdentity(self.tables, self.index_spec)

    def _current_tables(self) -> Tables:
        """The store's tables at the vector generation its identity check found (a ``reindex``
        makes a new one)."""
        generation = self._guard.generation
        if generation != self.tables.generation:
            self.tables = Tables(self.tables.prefix, generation)
            self._stats = self._new_stats()
        return self.tables

    def _probe(self) -> PostgresProbe | None:
        """The calibration's statements over the current vector table (``None``: no index)."""
        spec = self.index_spec
        return PostgresProbe(self._current_tables(), spec) if spec is not None else None

    def _items_plan(self, prefix: tuple[str, ...], after: Cursor, limit: int) -> Steps[ItemsPage]:
        """One page of ``iter_items`` (:func:`~langmem_adapters.postgres.export.items_plan`)."""
        return items_plan(self.tables, prefix, after, limit)

    def _restore_plan(self, records: list[tuple[StoredItem, str]]) -> Steps[int]:
        """One page of ``restore`` (:func:`~langmem_adapters.postgres.export.restore_plan`)."""
        return self._guarded(lambda: restore_plan(self._current_tables(), self.index_spec, records))

    def _bulk_start_plan(self) -> Steps[bool] | None:
        """A bulk load's start: drop the ANN index of an empty vector table, after the identity
        check (:func:`~langmem_adapters.postgres.bulk.drop_if_empty_plan`)."""
        spec = self.index_spec
        if spec is None or spec.kind == "exact":
            return None
        return self._guarded(lambda: drop_if_empty_plan(self._current_tables().vectors(spec), spec))

    def _bulk_finish_plan(self) -> Steps[bool] | None:
        """A bulk load's end: build the ANN index if it is missing, then analyze the tables
        (:func:`~langmem_adapters.postgres.bulk.build_index_plan`; an exact index has no ANN index
        to build, only the analysis)."""
        spec = self.index_spec
        if spec is None:
            return None
        t = self._current_tables()
        return build_index_plan(t.vectors(spec), spec, analyze=(t.store,))

    def _count_plan(self, prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> Steps[int]:
        """``count`` (:func:`~langmem_adapters.postgres.namespaces.count_plan`)."""
        return count_plan(self.tables, prefix, conditions)

    def _delete_namespace_plan(self, prefix: tuple[str, ...]) -> Steps[int]:
        """``delete_namespace`` (:func:`~langmem_adapters.postgres.namespaces.delete_namespace_plan`)."""
        return delete_namespace_plan(self.tables, prefix)

    @property
    def read_stats(self) -> ReadStats:
        """Where this store's read rounds went so far: the primary, or each replica (with what it
        last reported); all zero without replicas. No I/O (a property: nothing to await)."""
        return self._routing.stats() if self._routing is not None else ReadStats(0, ())

    def __repr__(self) -> str:
        """Where the store points, never with credentials (safe to log or show in a notebook)."""
        host, _, dbname = address(getattr(self, "conn", None))
        spec = self.index_spec
        index = f", index=dims {spec.dims} {spec.distance}" if spec else ""
        replicas = f", replicas={len(self._routing.replicas)}" if self._routing else ""
        return (
            f"{type(self).__name__}(host={host!r}, dbname={dbname!r}, "
            f"table_prefix={self.tables.prefix!r}{index}{replicas})"
        )
