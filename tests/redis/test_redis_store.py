"""Redis-specific behaviour: mode detection, prefixes, key layout, atomicity, TTL bookkeeping, Valkey."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from langgraph.store.base import PutOp

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from langmem_adapters.redis.tokens import token as _token
from langmem_adapters.redis.tokens import value_tokens as _value_tokens
from tests import servers
from tests.waiting import await_until, wait_until


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def qe_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(servers.redis_url(modules=True))
    yield client
    client.close()


@pytest.fixture
def plain_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(servers.redis_url(modules=False))
    yield client
    client.close()


def test_auto_mode_detection(qe_client: redis.Redis, plain_client: redis.Redis) -> None:
    qe = RedisStore(qe_client, prefix=_prefix())
    qe.setup()
    assert qe.mode == "query_engine"
    plain = RedisStore(plain_client, prefix=_prefix())
    plain.setup()
    assert plain.mode == "plain"
    with pytest.raises(RuntimeError):
        RedisStore(plain_client, prefix=_prefix(), mode="query_engine").setup()


def test_mode_override_and_recorded_mode(qe_client: redis.Redis) -> None:
    prefix = _prefix()
    store = RedisStore(qe_client, prefix=prefix, mode="plain")
    store.put(("a",), "k", {"v": 1})
    assert qe_client.type(store.keys.item("a", "k")) == b"hash"
    again = RedisStore(qe_client, prefix=prefix)  # auto adopts the recorded mode
    again.setup()
    assert again.mode == "plain"
    with pytest.raises(ValueError):
        RedisStore(qe_client, prefix=prefix, mode="query_engine").setup()
    with pytest.raises(ValueError):
        RedisStore(qe_client, prefix="bad:prefix")


@pytest.mark.parametrize("modules", [True, False])
def test_prefixes_are_isolated(modules: bool) -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=modules))
    a, b = RedisStore(client, prefix=_prefix()), RedisStore(client, prefix=_prefix())
    a.put(("ns",), "k", {"who": "a"})
    b.put(("ns", "deeper"), "k", {"who": "b"})
    assert a.get(("ns",), "k").value == {"who": "a"}  # type: ignore[union-attr]
    assert b.get(("ns",), "k") is None
    assert [r.value for r in a.search(("ns",))] == [{"who": "a"}]
    assert a.list_namespaces() == [("ns",)]
    assert b.list_namespaces() == [("ns", "deeper")]
    client.close()


def test_key_layout_uses_one_hash_tag_per_namespace(qe_client: redis.Redis) -> None:
    store = RedisStore(qe_client, prefix=_prefix(), ttl={"default_ttl": 5})
    ns = ("tenant {x}", "a|b*c\\d", "ü")
    store.batch([PutOp(ns, f"k{i}", {"i": i}) for i in range(3)])
    keys = [k.decode() for k in qe_client.scan_iter(f"{store.keys.prefix}:*")]
    ns_keys = [k for k in keys if ":i:" in k or ":z:" in k]
    assert len(ns_keys) == 4
    tags = {k[k.index("{") + 1 : k.index("}")] for k in ns_keys}
    assert len(tags) == 1  # every key of the namespace shares one hash tag, so one cluster slot
    assert store.get(ns, "k1").value == {"i": 1}  # type: ignore[union-attr]


@pytest.mark.parametrize("modules", [True, False])
def test_bookkeeping_keys_expire_natively(modules: bool) -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=modules))
    store = RedisStore(client, prefix=_prefix())
    store.put(("t",), "k", {"v": 1}, ttl=1)
    item, zset = store.keys.item("t", "k"), store.keys.zset("t")
    assert 0 < client.pttl(item) <= 60_000
    assert client.pttl(zset) > 0 and client.pttl(store.keys.registry) > 0
    store.put(("t",), "forever", {"v": 2})
    assert client.pttl(zset) == -1 and client.pttl(store.keys.registry) == -1
    store.delete(("t",), "forever")
    assert client.pttl(zset) > 0
    store.put(("t",), "k", {"v": 3})  # the update without a TTL makes the item permanent
    assert client.pttl(item) == -1 and store.get(("t",), "k").value == {"v": 3}  # type: ignore[union-attr]
    store.delete(("t",), "k")
    assert client.exists(zset) == 0 and store.list_namespaces() == []
    client.close()


@pytest.mark.parametrize("modules", [True, False])
def test_bookkeeping_stays_exact_when_rewrites_keep_their_expiry(modules: bool) -> None:
    """A rewrite that keeps an item's expiry (a permanent item stays permanent) leaves its ZSET entry
    as it is: the registry, the ZSETs and their expiries must stay exact, over many namespaces and
    through changes between permanent and expiring items."""
    from langmem_adapters.core import namespaces as nsp
    from langmem_adapters.redis.layout import NO_EXPIRY

    client = redis.Redis.from_url(servers.redis_url(modules=modules))
    store = RedisStore(client, prefix=_prefix())
    names = [("n", str(i)) for i in range(1205)]
    store.batch([PutOp(ns, "k", {"i": 1}) for ns in names])
    store.batch([PutOp(ns, "k", {"i": 2}) for ns in names])  # rewrites change no bookkeeping
    assert store.list_namespaces(limit=2000) == sorted(names)
    assert client.zcard(store.keys.registry) == len(names)
    z, item = store.keys.zset(nsp.join(("n", "7"))), store.keys.item(nsp.join(("n", "7")), "k")
    assert client.zscore(z, item) == NO_EXPIRY and client.pttl(z) == -1
    store.put(("n", "7"), "t", {"i": 3}, ttl=1)  # a TTL item beside a permanent one
    assert client.pttl(z) == -1
    store.delete(("n", "7"), "k")  # only the TTL item is left: the ZSET expires after it
    assert client.pttl(z) > 0 and client.zscore(store.keys.registry, "n.7") < NO_EXPIRY
    store.put(("n", "7"), "k", {"i": 4})
    assert client.pttl(z) == -1 and client.zscore(store.keys.registry, "n.7") == NO_EXPIRY
    store.batch([PutOp(ns, "k", None) for ns in names])
    assert store.list_namespaces(limit=2000) == [("n", "7")]
    assert [i.key for i in store.search(("n",), limit=5)] == ["t"]
    client.close()


def test_setup_rebuilds_a_missing_index_over_stored_items(qe_client: redis.Redis) -> None:
    """A new prefix's indexes skip the scan of the keyspace; on a prefix that already holds items
    the scan stays, so an index dropped by hand is rebuilt over them by the next setup()."""
    index = {"dims": 8, "embed": HashEmbeddings(8)}
    store = RedisStore(qe_client, prefix=_prefix(), index=index)  # type: ignore[arg-type]
    store.setup()
    store.put(("t",), "k", {"text": "alpha", "kind": "x"})
    for spec in (None, store.index_spec):
        qe_client.execute_command("FT.DROPINDEX", store.keys.index(spec))
    again = RedisStore(qe_client, prefix=store.keys.prefix, index=index)  # type: ignore[arg-type]
    again.setup()
    # The scan runs in the background.
    wait_until(lambda: again.search(("t",), filter={"kind": "x"}), what="the rebuilt index")
    assert [i.key for i in again.search(("t",), filter={"kind": "x"})] == ["k"]
    wait_until(lambda: again.search(("t",), query="alpha"), what="the rebuilt vector index")
    assert [i.key for i in again.search(("t",), query="alpha")] == ["k"]


def test_vector_documents_follow_their_items(qe_client: redis.Redis) -> None:
    """Query Engine mode keeps an item's vectors in a document beside it: written with the item,
    expiring with it, and gone when the item is deleted or stored without vectors."""
    store = RedisStore(qe_client, prefix=_prefix(), index={"dims": 8, "embed": HashEmbeddings(8)})
    store.setup()
    doc = store.keys.vectors("t", "k")
    store.put(("t",), "k", {"text": "alpha"}, ttl=1)
    assert qe_client.exists(doc) and 0 < qe_client.pttl(doc) <= 60_000
    assert [r.key for r in store.search(("t",), query="alpha")] == ["k"]
    store.put(("t",), "k", {"text": "beta"})  # no TTL now: neither the item nor its vectors expire
    assert qe_client.pttl(doc) == -1 and qe_client.pttl(store.keys.item("t", "k")) == -1
    store.put(("t",), "k", {"text": "beta"}, index=False)
    assert not qe_client.exists(doc)
    assert [(r.key, r.score) for r in store.search(("t",), query="beta")] == [("k", None)]
    assert [r.key for r in store.search(("t",), filter={"text": "beta"})] == ["k"]
    store.put(("t",), "k", {"text": "gamma"})
    assert qe_client.exists(doc)
    store.delete(("t",), "k")
    assert not qe_client.exists(doc) and store.search(("t",), query="gamma") == []


def test_a_vector_document_left_behind_is_neither_matched_nor_kept_alive(
    qe_client: redis.Redis,
) -> None:
    """An item hash removed out of band (eviction, a manual DEL) can leave its vector document
    behind: searches skip it, and a new item under that key does not inherit its expiry."""
    store = RedisStore(
        qe_client,
        prefix=_prefix(),
        index={"dims": 8, "embed": HashEmbeddings(8), "fields": ["text"]},
    )
    store.setup()
    item, doc = store.keys.item("t", "k"), store.keys.vectors("t", "k")
    store.put(("t",), "k", {"text": "secret plans", "acl": "public"})
    qe_client.delete(item)
    store.put(("t",), "k", {"note": "no text", "acl": "private"})
    assert store.search(("t",), query="secret plans", filter={"acl": "public"}) == []
    # Not matched by the document: the item (no text now) is only listed unscored.
    assert [(r.key, r.score) for r in store.search(("t",), query="secret plans")] == [("k", None)]
    store.put(("t",), "k2", {"text": "other", "acl": "public"}, ttl=5)
    qe_client.delete(store.keys.item("t", "k2"))
    store.put(("t",), "k2", {"text": "other again"})  # permanent now, with its vectors
    assert qe_client.pttl(store.keys.vectors("t", "k2")) == -1
    assert [(r.key, r.score is None) for r in store.search(("t",), query="other again")] == [
        ("k2", False),
        ("k", True),
    ]
    assert qe_client.exists(doc)  # left behind, harmless: nothing reads it


def test_setup_refuses_a_prefix_in_the_earlier_json_layout(qe_client: redis.Redis) -> None:
    prefix = _prefix()
    qe_client.set(f"{prefix}:mode", "query_engine")
    qe_client.execute_command(
        "FT.CREATE",
        f"{prefix}:idx",
        "ON",
        "JSON",
        "PREFIX",
        1,
        f"{prefix}:i:",
        "SCHEMA",
        "$.u",
        "AS",
        "u",
        "NUMERIC",
    )
    try:
        with pytest.raises(ValueError, match="JSON layout"):
            RedisStore(qe_client, prefix=prefix).setup()
    finally:
        qe_client.execute_command("FT.DROPINDEX", f"{prefix}:idx")


def test_filter_tokens_keep_their_stored_format() -> None:
    """Tags already stored must keep matching after an upgrade: a token is the 12-byte blake2b of
    kind, path JSON and canonical value JSON, whatever the code computing it."""

    def expected(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()

    assert _token("e", ("a", "b"), "x ü") == expected('e["a", "b"]"x ü"')
    assert _token("e", ("n",), 2.0) == expected('e["n"]2')
    assert _token("e", ("d",), {"z": 1, "a": [True, None]}) == expected(
        'e["d"]{"a":[true,null],"z":1}'
    )
    assert _token("x", ("s\ud800",)) == expected('x["s\ud800"]null')
    assert _value_tokens({"a": {"b": 1}}) == [
        _token("x", ("a",)),
        _token("e", ("a",), {"b": 1}),
        _token("x", ("a", "b")),
        _token("e", ("a", "b"), 1),
    ]


@pytest.mark.parametrize("modules", [True, False])
def test_refresh_uses_the_items_own_ttl(modules: bool) -> None:
    client = redis.Redis.from_url(servers.redis_url(modules=modules))
    store = RedisStore(client, prefix=_prefix(), ttl={"default_ttl": 100})
    store.put(("t",), "k", {"v": 1}, ttl=1)
    key = store.keys.item("t", "k")
    client.pexpire(key, 5_000)
    store.get(("t",), "k")
    assert 55_000 < client.pttl(key) <= 60_000
    store.search(("t",))
    assert 55_000 < client.pttl(key) <= 60_000
    client.close()


@pytest.mark.parametrize("modules", [True, False])
def test_batch_is_all_or_nothing_when_the_connection_drops(modules: bool) -> None:
    url = servers.redis_url(modules=modules)
    admin = redis.Redis.from_url(url)
    for attempt in range(5):
        client = redis.Redis.from_url(url, client_name=f"victim{attempt}", retry_on_error=[])
        store = RedisStore(
            client, prefix=_prefix(), index={"dims": 16, "embed": HashEmbeddings(16)}
        )
        store.setup()
        ops = [PutOp(("a", str(i % 7)), f"k{i}", {"text": f"item {i}"}) for i in range(3000)]
        errors: list[BaseException] = []

        def write(
            store: RedisStore = store, ops: list[PutOp] = ops, errors: list[BaseException] = errors
        ) -> None:
            try:
                store.batch(ops)
            except StoreConnectionError as exc:
                errors.append(exc)

        thread = threading.Thread(target=write)
        thread.start()
        time.sleep(0.01 * attempt)
        admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        thread.join()
        fresh = RedisStore(
            redis.Redis.from_url(url), prefix=store.keys.prefix, index=store.index_config
        )  # type: ignore[arg-type]
        found = fresh.search(("a",), limit=5000)
        assert len(found) in (0, 3000), (attempt, len(found), errors)
        hits = fresh.search(("a",), query="item 5", limit=5000)
        assert len(hits) == len(found), (attempt, len(hits), errors)  # no value without vectors
        assert len(fresh.list_namespaces()) == (7 if found else 0), (attempt, errors)
        client.close()
    admin.close()


def test_valkey_plain_mode_smoke() -> None:
    client = redis.Redis.from_url(servers.valkey_url())
    store = RedisStore(client, prefix=_prefix(), index={"dims": 16, "embed": HashEmbeddings(16)})
    store.setup()
    assert store.mode == "plain"
    store.put(("v", "1"), "a", {"text": "red apple", "n": 3})
    store.put(("v", "2"), "b", {"text": "green pear", "n": 5}, ttl=1)
    assert store.get(("v", "1"), "a").value["n"] == 3  # type: ignore[union-attr]
    assert [r.key for r in store.search(("v",), filter={"n": {"$gt": 4}})] == ["b"]
    assert store.search(("v",), query="apple")[0].key == "a"
    assert store.list_namespaces(prefix=("v",)) == [("v", "1"), ("v", "2")]
    assert store.put_if_absent(("v", "1"), "a", {"x": 1}) is False
    client.close()


async def test_async_store_matches_sync(qe_client: redis.Redis) -> None:
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(servers.redis_url(modules=True))
    store = AsyncRedisStore(client, prefix=_prefix())
    await store.aput(("x",), "k", {"v": 1})
    assert (await store.aget(("x",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    assert await store.aput_if_absent(("x",), "k2", {"v": 2}) is True
    assert await store.aput_if_absent(("x",), "k2", {"v": 3}) is False
    assert store.mode == "query_engine"
    await client.aclose()


def test_store_made_from_a_url_closes_its_client() -> None:

    import redis

    from tests import servers

    url = servers.redis_url(modules=False)
    admin = redis.Redis.from_url(url)
    store = RedisStore(url + "?client_name=urlclient", prefix="urlclient")
    store.put(("u",), "k", {"v": 1})
    assert store.get(("u",), "k").value == {"v": 1}  # type: ignore[union-attr]

    def ours() -> int:
        return sum(1 for c in admin.client_list() if c.get("name") == "urlclient")

    assert ours() >= 1
    store.close()
    # The server notices a closed socket on its next event loop turn.
    wait_until(lambda: ours() == 0, timeout=5, what="the server dropping our connections")
    admin.close()


def _available(pool: redis.ConnectionPool) -> int:
    """How many connections the client's other users can still check out of ``pool`` (a
    non-blocking pool refuses the one past ``max_connections``); all are given back."""
    taken: list[redis.Connection] = []
    try:
        while len(taken) <= 64:
            taken.append(_checkout(pool))
    except redis.ConnectionError:
        pass
    finally:
        for conn in taken:
            pool.release(conn)
    return len(taken)


def _checkout(pool: redis.ConnectionPool) -> redis.Connection:
    """One connection from ``pool`` (redis-py < 5.3 wants a command name, later ones none)."""
    try:
        return pool.get_connection()  # type: ignore[call-arg,no-any-return,unused-ignore]
    except TypeError:
        return pool.get_connection("PING")  # type: ignore[arg-type,no-any-return,unused-ignore]


@pytest.fixture
def pool_client() -> Iterator[redis.Redis]:
    """A client on a pool of 16 that fails at once when exhausted, as ``redis.Redis(url)`` makes."""
    kwargs = redis.Redis.from_url(servers.redis_url(modules=True)).connection_pool.connection_kwargs
    pool = redis.ConnectionPool(max_connections=16, host=kwargs["host"], port=kwargs["port"])
    client = redis.Redis(connection_pool=pool)
    yield client
    client.close()
    pool.disconnect()


def test_kept_connection_goes_back_and_small_pools_are_not_held(pool_client: redis.Redis) -> None:
    """The store keeps one connection of a large pool between calls and gives it back on close();
    from a small blocking pool it takes one per call, so the client's other users never starve."""
    store = RedisStore(pool_client, prefix=_prefix())
    pool = pool_client.connection_pool
    assert _available(pool) == 16
    store.put(("k",), "a", {"v": 1})
    assert _available(pool) == 15
    store.close()
    assert _available(pool) == 16
    kwargs = pool.connection_kwargs
    small = redis.Redis(
        connection_pool=redis.BlockingConnectionPool(
            max_connections=1, timeout=2, host=kwargs["host"], port=kwargs["port"]
        )
    )
    try:
        other = RedisStore(small, prefix=_prefix())
        other.put(("k",), "b", {"v": 2})
        assert small.ping() is True  # would time out if the store kept the only connection
        assert other.get(("k",), "b").value == {"v": 2}  # type: ignore[union-attr]
    finally:
        small.close()


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
@pytest.mark.parametrize("path", ["ours", "public"])
def test_commands_arrive_as_redis_py_sends_them(
    path: str, encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both packing paths deliver to the server exactly what redis-py would send: its public
    ``pack_commands`` (with hiredis, or a connection without a text encoding) and our own writer
    (without hiredis), for any encoding. The server's own view: it stores each argument of an
    ``RPUSH`` sent through the store's wire, and the list reads back equal to one redis-py sent."""
    from langmem_adapters.redis import connection as wire
    from langmem_adapters.redis.scripts import Call, Round

    monkeypatch.setattr(wire, "HIREDIS_AVAILABLE", path == "public")
    url = servers.redis_url(modules=False)
    client = redis.Redis.from_url(url, encoding=encoding, encoding_errors="replace")
    args = ("", b"\x00\x01\r\nblob", -7, 2**70, 1.5, 1e-300, "naïve ✓", "ключ", "x" * 1000, 0)
    ours, theirs = f"{_prefix()}:wire:ключ", f"{_prefix()}:redis-py"
    try:
        sent = Round([Call(("RPUSH", ours, *args)), Call((b"LRANGE", ours, 0, -1))])
        replies = wire.Wire(client, cluster=False).execute(sent)
        client.rpush(theirs, *args)
        assert replies[0] == len(args)
        assert replies[1] == client.lrange(theirs, 0, -1)
        assert client.lrange(ours, 0, -1) == replies[1]  # the key's name arrived intact too
    finally:
        client.delete(ours, theirs)
        client.close()


async def test_async_store_from_a_url_is_a_context_manager_and_queues_many_tasks() -> None:
    """``async with AsyncRedisStore(url)`` as with the official store; 150 concurrent puts (more
    than the pool's connections) all land, queued by the blocking pool instead of failing."""
    import asyncio

    url = servers.redis_url(modules=True)
    admin = redis.Redis.from_url(url)
    name = f"ctx{uuid.uuid4().hex[:8]}"

    def ours() -> int:
        return sum(1 for c in admin.client_list() if c.get("name") == name)

    async with AsyncRedisStore(f"{url}?client_name={name}", prefix=_prefix()) as store:
        await asyncio.gather(*(store.aput(("many",), f"k{i}", {"i": i}) for i in range(150)))
        items = await store.asearch(("many",), limit=200)
        assert sorted(item.value["i"] for item in items) == list(range(150))
        assert 1 <= ours() <= 64
    # The server notices closed sockets on its next loop turn.
    await await_until(lambda: ours() == 0, timeout=5, what="the server dropping our connections")
    admin.close()


def test_sync_store_is_a_context_manager(pool_client: redis.Redis) -> None:
    with RedisStore(pool_client, prefix=_prefix()) as store:
        store.put(("ctx",), "k", {"v": 1})
        assert _available(pool_client.connection_pool) == 15
    assert _available(pool_client.connection_pool) == 16  # the kept connection went back
    assert pool_client.ping() is True  # a client passed in stays open


async def test_official_constructor_keywords(qe_client: redis.Redis) -> None:
    """The official stores' keyword names work (switching is one import); conflicts are errors."""
    import redis.asyncio as aredis

    url = servers.redis_url(modules=True)
    prefix = _prefix()
    store = RedisStore(conn=qe_client, store_prefix=prefix, vector_prefix="unused")
    store.put(("kw",), "k", {"v": 1})
    assert store.keys.prefix == prefix and qe_client.exists(store.keys.item("kw", "k"))
    with RedisStore.from_conn_string(url, store_prefix=prefix) as again:
        assert again.get(("kw",), "k").value == {"v": 1}  # type: ignore[union-attr]
    async with AsyncRedisStore(redis_url=url, store_prefix=prefix) as astore:
        assert (await astore.aget(("kw",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    async with AsyncRedisStore.from_conn_string(url, store_prefix=prefix) as astore:
        assert (await astore.aget(("kw",), "k")).value == {"v": 1}  # type: ignore[union-attr]
    client = aredis.Redis.from_url(url)
    try:
        astore = AsyncRedisStore(redis_client=client, prefix=prefix, cluster_mode=False)
        assert (await astore.aget(("kw",), "k")).value == {"v": 1}  # type: ignore[union-attr]
        with pytest.raises(TypeError, match="not both"):
            AsyncRedisStore(redis_url=url, redis_client=client)
        with pytest.raises(TypeError, match="connection_args"):
            AsyncRedisStore(client, connection_args={"max_connections": 2})
    finally:
        await client.aclose()
    with pytest.raises(TypeError, match="not both"):
        RedisStore(qe_client, conn=qe_client)
    with pytest.raises(TypeError, match="required"):
        RedisStore()
    with pytest.raises(TypeError, match="prefix"):
        RedisStore(qe_client, prefix="a", store_prefix="b")
    with pytest.raises(ValueError, match="cluster_mode"):
        RedisStore(qe_client, cluster_mode=True)


async def test_an_exhausted_pool_is_named_as_such() -> None:
    """A client whose non-blocking pool runs out of connections gets an error that says so, not
    a "lost connection" one."""
    import asyncio

    import redis.asyncio as aredis

    client = aredis.Redis.from_url(servers.redis_url(modules=True), max_connections=2)
    try:
        store = AsyncRedisStore(client, prefix=_prefix())
        await store.setup()
        with pytest.raises(StoreConnectionError, match="pool is exhausted"):
            await asyncio.gather(*(store.aput(("few",), f"k{i}", {"i": i}) for i in range(50)))
    finally:
        await client.aclose()
