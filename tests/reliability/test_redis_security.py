"""Redis with a password (ACL user): the store authenticates, and the password never leaks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langmem_adapters.errors import StoreConnectionError
from langmem_adapters.redis import AsyncRedisStore, RedisStore
from tests.servers import RedisProcess, redis_command

SECRET = "s3cret-Redis-Pa55"


@pytest.fixture(scope="module")
def server() -> Iterator[RedisProcess]:
    # The default user stays open so the fixture can PING; the store logs in as ``memuser``.
    proc = RedisProcess(
        redis_command(modules=True), ["--user", "memuser", "on", f">{SECRET}", "~*", "&*", "+@all"]
    )
    yield proc
    proc.close()


def test_password_login_and_no_credential_leaks(
    server: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    good = f"redis://memuser:{SECRET}@127.0.0.1:{server.port}/0"
    with RedisStore.from_conn_string(good, prefix="auth") as store:
        store.put(("auth",), "k", {"v": 1})
        assert store.get(("auth",), "k").value == {"v": 1}  # type: ignore[union-attr]
        assert SECRET not in repr(store) and "memuser" not in repr(store)
    bad = f"redis://memuser:wrong-{SECRET}@127.0.0.1:{server.port}/0"
    with (
        pytest.raises(StoreConnectionError) as failed,
        RedisStore.from_conn_string(bad, prefix="auth"),
    ):
        pass
    assert "credentials" in str(failed.value) and SECRET not in str(failed.value)
    unreachable = f"redis://memuser:{SECRET}@127.0.0.1:1/0"
    with (
        pytest.raises(StoreConnectionError) as failed,
        RedisStore.from_conn_string(unreachable, prefix="auth"),
    ):
        pass
    assert SECRET not in str(failed.value) and SECRET not in repr(failed.value.__cause__)
    assert SECRET not in caplog.text


async def test_async_password_login(server: RedisProcess) -> None:
    url = f"redis://memuser:{SECRET}@127.0.0.1:{server.port}/0"
    async with AsyncRedisStore.from_conn_string(url, prefix="aauth") as store:
        await store.aput(("auth",), "k", {"v": 2})
        assert (await store.aget(("auth",), "k")).value == {"v": 2}  # type: ignore[union-attr]
        assert SECRET not in repr(store)
