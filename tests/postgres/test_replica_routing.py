"""The read-replica routing rules (``postgres/replicas.py``) on their own: no server, a driven clock."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError
from langmem_adapters.postgres import AsyncPostgresStore, PostgresStore
from langmem_adapters.postgres.replicas import POSITION, REPLAYED, ReadRun, Replica, Routing
from langmem_adapters.postgres.sql import Round, Statement

READ = Round([Statement("SELECT 1")])
REFRESH = Round([Statement("UPDATE t SET x = 1", fetch=False)], writes=True)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(n: int = 2) -> tuple[Routing[str], list[Replica[str]], Clock]:
    clock = Clock()
    replicas = [Replica(f"r{i}", f"r{i}") for i in range(n)]
    return Routing(replicas, retry=5.0, clock=clock), replicas, clock


def test_reads_take_turns_and_need_no_check_before_any_write() -> None:
    routing, replicas, _ = make()
    chosen = [routing.route() for _ in range(4)]
    assert [r.replica for r in chosen] == [replicas[0], replicas[1], replicas[0], replicas[1]]
    assert not any(r.check or r.learn is not None for r in chosen)


def test_after_a_write_a_replica_serves_only_once_it_has_replayed_it() -> None:
    routing, replicas, _ = make(1)
    routing.learned(routing.wrote(), 1000)
    run = ReadRun(routing)
    where, sent = run.target(READ)
    assert where is replicas[0] and sent.statements == [REPLAYED, *READ.statements]
    assert run.from_replica(replicas[0], [[(999,)], [(1,)]]) is None  # behind: to the primary
    assert run.target(READ) == (None, READ)
    assert replicas[0].behind == 1
    run = ReadRun(routing)
    run.target(READ)
    assert run.from_replica(replicas[0], [[(1000,)], [(1,)]]) == [[(1,)]]
    # Known to have replayed the store's writes: no more checks until it writes again.
    run = ReadRun(routing)
    assert run.target(READ) == (replicas[0], READ)
    assert run.from_replica(replicas[0], [[(1,)]]) == [[(1,)]]
    routing.learned(routing.wrote(), 2000)
    assert ReadRun(routing).target(READ)[1].statements[0] == REPLAYED


def test_a_standby_reporting_no_replay_position_is_not_trusted_after_writes() -> None:
    routing, replicas, _ = make(1)
    routing.learned(routing.wrote(), 10)
    run = ReadRun(routing)
    run.target(READ)
    assert run.from_replica(replicas[0], [[(None,)], [(1,)]]) is None


def test_a_write_whose_end_is_unknown_sends_the_next_read_to_the_primary_to_learn_it() -> None:
    routing, replicas, _ = make(1)
    routing.wrote()  # the position could not be read after this commit
    run = ReadRun(routing)
    where, sent = run.target(READ)
    assert where is None and sent.statements == [*READ.statements, POSITION]
    assert run.from_primary([[(1,)], [(500,)]]) == [[(1,)]]
    run = ReadRun(routing)
    where, sent = run.target(READ)
    assert where is replicas[0] and sent.statements[0] == REPLAYED
    assert run.from_replica(replicas[0], [[(500,)], [(1,)]]) == [[(1,)]]
    assert routing.stats().primary == 1


def test_a_write_round_goes_to_the_primary_and_the_plan_stays_there() -> None:
    routing, replicas, _ = make(1)
    run = ReadRun(routing)
    assert run.target(READ)[0] is replicas[0]
    assert run.target(REFRESH) == (None, REFRESH)
    assert run.target(READ) == (None, READ)


def test_a_failed_replica_is_left_alone_then_tried_again() -> None:
    routing, replicas, clock = make(2)
    run = ReadRun(routing)
    assert run.target(READ)[0] is replicas[0]
    run.failed(replicas[0], psycopg.OperationalError("connection refused"))
    assert run.target(READ) == (None, READ)  # this plan goes on at the primary
    assert [routing.route().replica for _ in range(3)] == [replicas[1]] * 3
    assert not routing.stats().replicas[0].up
    clock.now += 5.0
    assert {routing.route().replica for _ in range(2)} == set(replicas)
    # A query cancelled by a recovery conflict does not take the replica out of turn.
    routing.failed(replicas[1], psycopg.errors.SerializationFailure("conflict with recovery"))
    assert routing.stats().replicas[1].up and routing.stats().replicas[1].failures == 1


def test_with_every_replica_down_reads_go_to_the_primary() -> None:
    routing, replicas, _ = make(1)
    routing.failed(replicas[0], psycopg.OperationalError("gone"))
    run = ReadRun(routing)
    assert run.target(READ) == (None, READ)
    assert run.from_primary([[(1,)]]) == [[(1,)]]


@pytest.mark.parametrize(
    ("replicas", "retry", "error"),
    [
        ("postgresql://replica/db", 5.0, InvalidArgumentTypeError),  # a string, not a list of them
        ([42], 5.0, InvalidArgumentTypeError),
        (["postgresql://replica/db"], -1, InvalidArgumentError),
        (["postgresql://replica/db"], float("nan"), InvalidArgumentError),
        (["postgresql://replica/db"], "5", InvalidArgumentTypeError),
    ],
)
async def test_bad_replica_arguments_are_refused_before_any_connection(
    replicas: Any, retry: Any, error: type[Exception]
) -> None:
    unreachable = "postgresql://nobody@127.0.0.1:1/none"  # never connected to: checked first
    with (
        pytest.raises(error),
        PostgresStore.from_conn_string(unreachable, replicas=replicas, replica_retry=retry),
    ):
        pass
    with pytest.raises(error):
        async with AsyncPostgresStore.from_conn_string(
            unreachable, replicas=replicas, replica_retry=retry
        ):
            pass
    with pytest.raises(InvalidArgumentTypeError):
        PostgresStore(None, replicas=["postgresql://replica/db"])  # type: ignore[arg-type,list-item]
