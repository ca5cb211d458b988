"""What the sync and async Redis stores share (:class:`RedisBackend`): the key layout and mode,
the plans built on them, the embedder identity's place, and the hooks the store's parts are made
with (its search stats, its probe, plain mode's exact search, its reindex job)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from langgraph.store.base import Op, PutOp

from langmem_adapters.core.calibrated import Tuning
from langmem_adapters.core.drive import Steps
from langmem_adapters.core.filters import Condition
from langmem_adapters.core.identity import Identity, guarded
from langmem_adapters.core.records import Cursor, StoredItem
from langmem_adapters.core.store import ItemsPage, Store
from langmem_adapters.core.vectors import IndexSpec
from langmem_adapters.redis.export import items_plan, restore_plan
from langmem_adapters.redis.identity import RedisIdentity
from langmem_adapters.redis.layout import Keys, Mode
from langmem_adapters.redis.namespaces import count_plan, delete_namespace_plan
from langmem_adapters.redis.options import ModeOption
from langmem_adapters.redis.plan import plan, put_if_absent_plan
from langmem_adapters.redis.probe import RedisProbe
from langmem_adapters.redis.reindex import RedisReindex
from langmem_adapters.redis.schema import check_mode, setup_plan
from langmem_adapters.redis.search import COLD, EF_RUNTIME, EXACT_BELOW
from langmem_adapters.redis.stats import RedisStats

__all__ = ["RedisBackend"]


class RedisBackend(Store[RedisStats]):
    """The ``Store`` both Redis stores derive from (each with its driver): the key layout and mode,
    the plans built on them, and the hooks the store's parts are made with."""

    _tuning = Tuning(EF_RUNTIME, EXACT_BELOW, COLD)

    def _new_stats(self) -> RedisStats:
        """Fresh search stats for the current index (measured anew)."""
        return RedisStats(calibration=self._calibration.calibrator(self.index_spec))

    def __repr__(self) -> str:
        """Where the store points, never with credentials (safe to log or show in a notebook)."""
        client: Any = getattr(self, "client", None)
        pool = getattr(client, "connection_pool", None)
        kwargs = getattr(pool, "connection_kwargs", {})
        where = f"host={kwargs.get('host')!r}, port={kwargs.get('port')!r}, " if kwargs else ""
        if service := getattr(pool, "service_name", None):  # a primary behind Sentinel
            where = f"sentinel_service={service!r}, "
        return f"{type(self).__name__}({where}prefix={self.keys.prefix!r}, mode={self.mode!r})"

    def _configure_redis(self, prefix: str, mode: ModeOption) -> None:
        self.keys = Keys(prefix)
        check_mode(mode)
        self.requested_mode: ModeOption = mode
        self.mode: Mode | None = None
        self.cluster = False
        self._stats = self._new_stats()

    def _setup(self) -> Steps[Mode]:
        """``setup()``: detect the mode and create the search index; the store's mode from now on."""
        self.mode = yield from setup_plan(
            self.keys, self.index_spec, self.requested_mode, self.cluster
        )
        return self.mode

    def _ready(self) -> Steps[Mode]:
        """The store's mode, detected first (``setup()``) if the store has not yet."""
        if self.mode is None:
            return (yield from self._setup())
        return self.mode

    def _plan(self, ops: Iterable[Op], *, if_absent: bool = False) -> Steps[Any]:
        """The batch plan, or with ``if_absent`` the atomic create of its one put (see
        :func:`langmem_adapters.redis.plan.plan` and :func:`~.plan.put_if_absent_plan`)."""
        mode = self.mode if self.mode is not None else (yield from self._ready())
        ops = list(ops)
        keys, cluster = self.keys, self.cluster

        def steps() -> Steps[Any]:  # built after the identity check: it may switch the index
            spec = self.index_spec
            if if_absent:
                return put_if_absent_plan(keys, mode, spec, cast(PutOp, ops[0]), cluster=cluster)
            return plan(keys, mode, spec, ops, cluster=cluster, stats=self._stats)

        return (yield from guarded(self._guard, self.index_spec, self._identity_access, steps, ops))

    def _reindex_job(self, target: IndexSpec, identity: Identity) -> RedisReindex:
        """The plans re-embedding this store into ``target`` (see :meth:`reindex`)."""
        assert self.index_spec is not None
        return RedisReindex(
            self.keys, self._ready, self.index_spec, target, identity, self._switched, self.cluster
        )

    def _switched(self, spec: IndexSpec, identity: Identity) -> None:
        """After a reindex switched: the new index and identity from now on."""
        self._adopt(spec, identity, 0)

    def _probe(self) -> RedisProbe | None:
        """The calibration's commands over the store's vector index (``None``: no index, or plain)."""
        spec = self.index_spec
        if spec is None or self.mode != "query_engine":
            return None
        return RedisProbe(self.keys, spec)

    def _exact_only(self) -> bool:
        """Plain mode scores every search exactly (numpy), whatever the index options."""
        return self.mode == "plain"

    def _identity_access(self) -> RedisIdentity:
        """Where this store's embedder identity is recorded."""
        assert self.index_spec is not None
        return RedisIdentity(self.keys, self.index_spec)

    def _items_plan(self, prefix: tuple[str, ...], after: Cursor, limit: int) -> Steps[ItemsPage]:
        """One page of ``iter_items`` (see :func:`langmem_adapters.redis.export.items_plan`)."""
        yield from self._ready()
        return (yield from items_plan(self.keys, prefix, after, limit))

    def _restore_plan(self, records: list[tuple[StoredItem, str]]) -> Steps[int]:
        """One page of ``restore`` (see :func:`langmem_adapters.redis.export.restore_plan`)."""
        mode = yield from self._ready()

        def steps() -> Steps[int]:  # built after the identity check, as a batch's
            return restore_plan(self.keys, mode, self.index_spec, records, self.cluster)

        return (yield from guarded(self._guard, self.index_spec, self._identity_access, steps))

    def _count_plan(self, prefix: tuple[str, ...], conditions: tuple[Condition, ...]) -> Steps[int]:
        """``count`` (see :func:`langmem_adapters.redis.namespaces.count_plan`)."""
        mode = yield from self._ready()
        return (yield from count_plan(self.keys, mode, prefix, conditions))

    def _delete_namespace_plan(self, prefix: tuple[str, ...]) -> Steps[int]:
        """``delete_namespace`` (see :func:`langmem_adapters.redis.namespaces.delete_namespace_plan`)."""
        mode = yield from self._ready()
        return (yield from delete_namespace_plan(self.keys, mode, prefix, self.cluster))
