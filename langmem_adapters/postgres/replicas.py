"""Read replicas of the Postgres stores: which server each round of a read goes to, and the rule
that keeps a store's reads consistent with its own writes.

Routing is a connection choice around the plans, which stay as they are. A store with replicas runs
a plan that only reads (a batch of gets, searches and ``list_namespaces``, ``count``, a page of
``iter_items``) in a read session (:class:`ReadRun` decides, the sessions of
:mod:`~langmem_adapters.postgres.routed` carry it out): its rounds go to a hot-standby replica,
except a round marked ``Round.writes`` (a TTL refresh, the lexical terms copy), which goes to the
primary, as does every round after the plan first used the primary. Plans that write run on the
primary.

Read-your-writes within one store: once a plan that wrote (or a read's TTL refresh) has committed on
the primary, the store asks the primary for its WAL insert position (``pg_current_wal_insert_lsn()``,
one more round trip on the same connection) and remembers the highest. A replica serves a read only
once it has replayed that position (``pg_last_wal_replay_lsn()``, asked in the same round trip as
the read, which goes to the primary instead when the replica is behind). What a replica is known to
have replayed is remembered, so while the store does not write, its reads go to a replica with no
check at all. When the position could not be read (the connection was lost just after a commit, or
a plan failed after committing part of its work), the store's next read goes to the primary and
learns it there, in the same round trip as the read. Writes of other clients appear on a replica
after its replication lag.

A replica that fails (lost, refusing connections, a query cancelled by a recovery conflict) costs
the caller nothing but a round on the primary: the read is answered there, and a replica whose
connection failed is left alone for :data:`RETRY_SECONDS` before it is tried again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psycopg

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.postgres.sql import Answer, Round, Statement

__all__ = [
    "RETRY_SECONDS",
    "WAIT_SECONDS",
    "ReadRun",
    "ReadStats",
    "Replica",
    "ReplicaStats",
    "Routing",
    "check_replicas",
]

#: How long a replica whose connection failed is left alone before a read tries it again.
RETRY_SECONDS = 5.0
#: How long a read waits for a connection of a replica's pool (made by ``from_conn_string``) before
#: it is answered by the primary instead: connecting on a network takes milliseconds.
WAIT_SECONDS = 1.0

#: The replica's replay position, sent before a read that must not be older than the store's writes.
REPLAYED = Statement("SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8")
#: The primary's WAL insert position (read after commits: at or past their end). When the last record
#: ended exactly at a page boundary, the insert position points past the next page's header (24 bytes,
#: 40 on a segment's first page), which no record ends in and a standby's replay position never
#: reports (it reports record ends): that boundary is used instead, or a replica would look behind
#: until more WAL came. Every record end at or past the boundary is at or past the insert position
#: too (a record is at least 24 bytes), so the comparison means the same.
POSITION = Statement(
    "SELECT p - CASE WHEN p % b IN (24, 40) THEN p % b ELSE 0 END FROM "
    "(SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8 AS p, "
    "current_setting('wal_block_size')::int8 AS b) AS w"
)

Source = TypeVar("Source")


def check_replicas(replicas: Any, kinds: tuple[type, ...], what: str, retry: Any) -> list[Any]:
    """The ``replicas`` argument as a list whose items are all ``kinds`` (``what`` names them),
    and a ``replica_retry`` that is a number of seconds >= 0; else our error naming the problem."""
    if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Iterable):
        raise InvalidArgumentTypeError(
            f"replicas must be a list of {what}, got {type(replicas).__name__}"
        )
    items = list(replicas)
    for replica in items:
        if not isinstance(replica, kinds):
            raise InvalidArgumentTypeError(
                f"each of replicas must be {what}, got {type(replica).__name__}"
            )
    if isinstance(retry, bool) or not isinstance(retry, (int, float)):
        raise InvalidArgumentTypeError(
            f"replica_retry must be a number of seconds, got {type(retry).__name__}"
        )
    if not math.isfinite(retry) or retry < 0:
        raise InvalidArgumentError(f"replica_retry must be finite and >= 0, got {retry!r}")
    return items


@dataclass(frozen=True)
class ReplicaStats:
    """One replica as a store saw it: ``reads`` (rounds it answered), ``behind`` (rounds it was
    asked for but had not replayed this store's writes yet), ``failures`` (rounds that failed on it),
    ``up`` (tried by the next read), ``replayed`` (the WAL position it last reported, -1: unknown)."""

    name: str
    up: bool
    reads: int
    behind: int
    failures: int
    replayed: int


@dataclass(frozen=True)
class ReadStats:
    """Where a store's read rounds went: ``primary`` counts the read rounds the primary answered
    (a read after this store's writes, no replica up, a replica behind or failing)."""

    primary: int
    replicas: tuple[ReplicaStats, ...]


class Replica(Generic[Source]):
    """One replica: its connections, how far it is known to have replayed, its counters, and until
    when it is left alone after a failure."""

    def __init__(self, connections: Source, name: str) -> None:
        self.connections = connections
        self.name = name
        self.replayed = -1
        self.down_until = -1.0
        self.reads = self.behind = self.failures = 0


@dataclass(frozen=True)
class Route:
    """Where a plan's reads start: a replica (``check``: ask its replay position with the first
    round), or the primary (``replica`` is ``None``); ``learn``: the count of the store's writes the
    primary's position will cover, when it must be learnt."""

    replica: Replica[Any] | None
    check: bool
    learn: int | None


class Routing(Generic[Source]):
    """The store's replicas and what it knows of its own writes (no I/O; shared by the threads or
    tasks of one store). ``clock`` is injectable for tests of the retry timing."""

    def __init__(
        self,
        replicas: Sequence[Replica[Source]],
        *,
        retry: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.replicas = list(replicas)
        self.retry, self.clock = retry, clock
        self._lock = threading.Lock()
        self._turn = 0
        self._writes = 0  # plans this store ended on the primary
        self._known = 0  # how many of them ``_position`` covers
        self._position = -1  # a primary WAL position at or after the end of those (-1: none yet)
        self.primary_reads = 0

    def wrote(self) -> int:
        """Count a plan that wrote and ended on the primary (committed, or failed after it may
        have): reads after it must see it. Returns how many have."""
        with self._lock:
            self._writes += 1
            return self._writes

    def route(self) -> Route:
        """Where the first read round of a plan goes."""
        with self._lock:
            learn = self._writes if self._writes > self._known else None
            if learn is not None:
                return Route(None, False, learn)
            replica = self._next_up()
            if replica is None:
                return Route(None, False, None)
            return Route(replica, replica.replayed < self._position, None)

    def _next_up(self) -> Replica[Source] | None:
        """The next replica not left alone, taking turns."""
        now, n = self.clock(), len(self.replicas)
        for i in range(n):
            replica = self.replicas[(self._turn + i) % n]
            if replica.down_until <= now:
                self._turn = (self._turn + i + 1) % n
                return replica
        return None

    def learned(self, writes: int, position: int) -> None:
        """The primary's position, read after the first ``writes`` of this store had ended."""
        with self._lock:
            if writes > self._known:
                self._known = writes
            if position > self._position:
                self._position = position

    def caught_up(self, replica: Replica[Source], replayed: int | None) -> bool:
        """Whether a replica that reported ``replayed`` (``None``: not a standby) holds this store's
        writes; it is remembered, so later reads need no check while the store does not write."""
        with self._lock:
            replica.replayed = -1 if replayed is None else replayed
            if replica.replayed >= self._position:
                return True
            replica.behind += 1
            return False

    def failed(self, replica: Replica[Source], exc: psycopg.Error) -> None:
        """A round failed on ``replica``: forget its position (a new server may answer there next);
        one whose connection failed (not a query cancelled by a recovery conflict) is left alone for
        ``retry`` seconds."""
        with self._lock:
            replica.failures += 1
            replica.replayed = -1
            conflict = (exc.sqlstate or "").startswith("40")  # class 40: transaction rollback
            if isinstance(exc, psycopg.OperationalError) and not conflict:
                replica.down_until = self.clock() + self.retry

    def served(self, replica: Replica[Source] | None) -> None:
        """Count a read round answered by ``replica`` (``None``: the primary)."""
        with self._lock:
            if replica is None:
                self.primary_reads += 1
            else:
                replica.reads += 1

    def stats(self) -> ReadStats:
        """Where the read rounds went so far."""
        now = self.clock()
        return ReadStats(
            self.primary_reads,
            tuple(
                ReplicaStats(r.name, r.down_until <= now, r.reads, r.behind, r.failures, r.replayed)
                for r in self.replicas
            ),
        )


class ReadRun(Generic[Source]):
    """The routing of one read-only plan run: for each round, where it goes and what to send there;
    then what of the answer the plan gets (sans-IO: the sync and async sessions carry it out)."""

    __slots__ = ("_check", "_learn", "on_primary", "replica", "routing")

    def __init__(self, routing: Routing[Source]) -> None:
        self.routing = routing
        self.replica: Replica[Source] | None = None  # the replica this plan reads from
        self.on_primary = False  # the plan moved to the primary: its later rounds go there too
        self._check = False
        self._learn: int | None = None

    def target(self, request: Round) -> tuple[Replica[Source] | None, Round]:
        """Where ``request`` goes (a replica, or ``None``: the primary) and the round to send."""
        if not (self.on_primary or request.writes):
            if self.replica is None:
                route = self.routing.route()
                self.replica, self._check, self._learn = route.replica, route.check, route.learn
            if self.replica is not None:
                if self._check:
                    return self.replica, Round([REPLAYED, *request.statements], request.tx)
                return self.replica, request
        self.on_primary = True
        if not request.writes:
            self.routing.served(None)
        if self._learn is not None:
            return None, Round([*request.statements, POSITION], request.tx)
        return None, request

    def from_primary(self, answer: Answer) -> Answer:
        """The plan's answer to a round the primary answered."""
        if self._learn is not None:
            self.routing.learned(self._learn, int(answer[-1][0][0]))
            self._learn = None
            return answer[:-1]
        return answer

    def from_replica(self, replica: Replica[Source], answer: Answer) -> Answer | None:
        """The plan's answer to a round ``replica`` answered; ``None`` when it had not replayed the
        store's writes: the round goes to the primary instead."""
        if self._check:
            self._check = False
            replayed = answer[0][0][0]
            if not self.routing.caught_up(replica, None if replayed is None else int(replayed)):
                self.on_primary = True
                return None
            answer = answer[1:]
        self.routing.served(replica)
        return answer

    def failed(self, replica: Replica[Source], exc: psycopg.Error) -> None:
        """A round failed on ``replica``: it and the plan's later rounds go to the primary."""
        self.routing.failed(replica, exc)
        self.on_primary = True
