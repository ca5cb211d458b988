"""``redis+sentinel://`` URLs and the ``wait_replicas`` option, without a server: what they mean
and how a bad one is refused (the Sentinel setups themselves: tests/reliability/test_redis_sentinel.py)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from langmem_adapters.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    StoreConnectionError,
)
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.durability import ReplicaWait, replica_wait
from langmem_adapters.redis.scripts import Call, Round
from langmem_adapters.redis.urls import is_sentinel_url, parse_sentinel_url


def test_full_url() -> None:
    target = parse_sentinel_url(
        "redis+sentinel://me:p%40ss@10.0.0.1:26380,[::1],sentinel-b/cache/3"
        "?sentinel_password=s3&socket_timeout=0.5&min_other_sentinels=1"
    )
    assert target.sentinels == [("10.0.0.1", 26380), ("::1", 26379), ("sentinel-b", 26379)]
    assert (target.service_name, target.db) == ("cache", 3)
    assert (target.username, target.password) == ("me", "p@ss")
    assert target.sentinel_kwargs() == {
        "socket_timeout": 0.5,
        "socket_connect_timeout": 2.0,
        "password": "s3",
    }
    node = target.node_kwargs()
    assert node == {"db": 3, "username": "me", "password": "p@ss", "socket_timeout": 0.5}
    assert "p@ss" not in repr(target)


def test_defaults() -> None:
    target = parse_sentinel_url("redis+sentinel://localhost")
    assert target.sentinels == [("localhost", 26379)]
    assert (target.service_name, target.db, target.username, target.password) == (
        "mymaster",
        0,
        None,
        None,
    )
    assert parse_sentinel_url("REDIS+SENTINEL://:pw@h:1/svc").password == "pw"
    assert is_sentinel_url("redis+sentinel://h") and not is_sentinel_url("redis://h:26379")
    assert target.sentinel_kwargs() == {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
    assert target.node_kwargs() == {"db": 0, "username": None, "password": None}


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel://", "no sentinel address"),
        ("redis+sentinel://h:port", "not a number"),
        ("redis+sentinel://:26379", "has no host"),
        ("redis+sentinel://h/svc/zero", "database 'zero'"),
        ("redis+sentinel://h/svc/0/extra", "nothing after db"),
        ("redis+sentinel://h/svc?ssl=true", "unknown option 'ssl'"),
        ("redis+sentinel://h/svc?socket_timeout=soon", "not a float"),
        ("redis+sentinel://h/svc?socket_timeout=-1", "must be > 0"),
        ("redis+sentinel://h/svc?max_connections=0", "must be > 0"),
        ("redis+sentinel://h/svc?min_other_sentinels=-1", "must be >= 0"),
        ("redis+sentinel://h/svc?max_connections=1&max_connections=2", "given twice"),
        ("redis://h", "scheme"),
    ],
)
def test_bad_urls_are_named(url: str, problem: str) -> None:
    with pytest.raises(InvalidArgumentError, match=problem):
        parse_sentinel_url(url)


def test_bad_url_error_hides_the_password() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_sentinel_url("redis+sentinel://user:secret@h/svc?bogus=1")
    assert "secret" not in str(info.value)


def test_stores_refuse_an_unusable_url() -> None:
    with pytest.raises(InvalidArgumentError, match=r"unusable Redis URL.*redis\+sentinel://"):
        RedisStore("http://127.0.0.1:6379")
    with pytest.raises(InvalidArgumentError, match="unusable Redis URL"):
        AsyncRedisStore("redis://127.0.0.1:port")


def test_stores_refuse_a_bad_sentinel_url_before_connecting() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown option"):
        RedisStore("redis+sentinel://127.0.0.1:1/svc?bogus=1")
    with pytest.raises(InvalidArgumentError, match="not a number"):
        AsyncRedisStore("redis+sentinel://127.0.0.1:x/svc")


@pytest.mark.parametrize(
    ("replicas", "timeout", "error"),
    [
        ("1", 1.0, InvalidArgumentTypeError),
        (True, 1.0, InvalidArgumentTypeError),
        (1, "1", InvalidArgumentTypeError),
        (-1, 1.0, InvalidArgumentError),
        (1, 0, InvalidArgumentError),
        (1, float("nan"), InvalidArgumentError),
        (1, float("inf"), InvalidArgumentError),
    ],
)
def test_bad_wait_options(replicas: Any, timeout: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="wait_"):
        replica_wait(replicas, timeout, cluster=False)
    with pytest.raises(error, match="wait_"):
        RedisStore(redis.Redis(), wait_replicas=replicas, wait_timeout=timeout)


def test_wait_options() -> None:
    assert replica_wait(0, 1.0, cluster=True) is None
    assert replica_wait(2, 0.0001, cluster=False) == ReplicaWait(2, 1)
    assert replica_wait(1, 2.5, cluster=False) == ReplicaWait(1, 2500)
    with pytest.raises(InvalidArgumentError, match="Redis Cluster"):
        replica_wait(1, 1.0, cluster=True)


WRITE = Call(("a", "b"), script="write", keys=("k",))
SEARCH = Call(("q",), script="search", keys=("k",))


def test_wait_follows_rounds_that_write() -> None:
    wait = ReplicaWait(1, 500)
    reads = Round([Call(("HMGET", "k", "v")), SEARCH, Call(("zrange", "z", 0, -1))])
    assert wait.round(reads) is reads
    for writes in (
        Round([Call(("HMGET", "k", "v")), WRITE]),
        Round([Call(("SET", "m", "plain", "NX"))], check=False),
        Round([Call(("FT.CREATE", "idx"))]),  # not known to be a read: waited for
    ):
        sent = wait.round(writes)
        assert sent.calls == [*writes.calls, Call(("WAIT", 1, 500))]
        assert sent.check == writes.check


def test_wait_replies() -> None:
    wait = ReplicaWait(2, 500)
    request = Round([WRITE])
    assert wait.replies(request, ["ok", 2]) == ["ok"]
    assert wait.replies(Round([SEARCH]), ["found"]) == ["found"]
    with pytest.raises(StoreConnectionError, match="only 1 of the 2 replicas"):
        wait.replies(request, ["ok", 1])
    with pytest.raises(StoreConnectionError, match="refused WAIT"):
        wait.replies(request, ["ok", redis.ResponseError("ERR WAIT cannot be used")])
