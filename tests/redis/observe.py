"""What a Redis store sends, seen through public surfaces only: the round trips it makes (redis-py's
public ``Connection.send_packed_command``: a round is one write, a pipeline too) and the commands
the server ran (``INFO commandstats``, script calls and the commands scripts ran included)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

__all__ = ["round_trips", "server_calls"]


@contextmanager
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """While the block runs, one entry per write of a round to any server, sync or async."""
    writes: list[int] = []
    send, asend = redis.Connection.send_packed_command, aredis.Connection.send_packed_command

    def counted(conn: redis.Connection, command: Any, check_health: bool = True) -> None:
        writes.append(1)
        send(conn, command, check_health)

    async def acounted(conn: aredis.Connection, command: Any, check_health: bool = True) -> None:
        writes.append(1)
        await asend(conn, command, check_health)

    with monkeypatch.context() as patch:
        patch.setattr(redis.Connection, "send_packed_command", counted)
        patch.setattr(aredis.Connection, "send_packed_command", acounted)
        yield writes


@contextmanager
def server_calls(client: redis.Redis) -> Iterator[dict[str, int]]:
    """How many times the server ran each command (``evalsha``, ``FT.SEARCH``, ...) while the block
    ran; filled in when it ends (0 for a command not run). ``client`` reads the stats: open it
    before the block, so its own connection's setup is not counted."""

    def calls() -> dict[str, int]:
        stats = client.info("commandstats")
        return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}

    before, delta = calls(), dict[str, int]()
    yield delta
    after = calls()
    delta.update({k: n - before.get(k, 0) for k, n in after.items()})
    delta.update({k: 0 for k in ("evalsha", "FT.SEARCH") if k not in delta})
