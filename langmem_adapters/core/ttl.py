"""TTL rules shared by the stores: config validation, refresh decision and the background sweeper."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langgraph.store.base import TTLConfig

from langmem_adapters.core.ops import MAX_TTL_MINUTES
from langmem_adapters.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["AsyncSweeper", "Sweeper", "check_ttl_config", "sweep_interval"]

logger = logging.getLogger("langmem_adapters")

_KEYS = {"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"}


def _minutes(value: Any, what: str) -> float:
    """``value`` checked as a positive, finite number of minutes (a bool is not a number here);
    ``what`` names it in the error."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive number of minutes, got {value!r}")
    return float(value)


def check_ttl_config(ttl: TTLConfig | Mapping[str, Any] | None) -> TTLConfig | None:
    """Validate a TTLConfig: positive finite minutes; expired items are always omitted here."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidArgumentTypeError(f"ttl must be a TTLConfig dict, got {type(ttl).__name__}")
    unknown = set(ttl) - _KEYS
    if unknown:
        raise InvalidArgumentError(f"unknown TTLConfig keys: {sorted(unknown)}")
    default = ttl.get("default_ttl")
    if default is not None and _minutes(default, "TTLConfig default_ttl") > MAX_TTL_MINUTES:
        raise InvalidArgumentError(
            f"TTLConfig default_ttl must be at most {MAX_TTL_MINUTES:,} minutes, got {default!r}"
        )
    if ttl.get("sweep_interval_minutes") is not None:
        _minutes(ttl["sweep_interval_minutes"], "TTLConfig sweep_interval_minutes")
    return TTLConfig(**ttl)  # type: ignore[typeddict-item]


def sweep_interval(ttl: TTLConfig | None, override: float | None) -> float:
    """Seconds between sweeps: the argument, else the config, else 5 minutes (at most
    ``threading.TIMEOUT_MAX``, about 292 years)."""
    minutes = override if override is not None else (ttl or {}).get("sweep_interval_minutes") or 5
    # A longer wait than TIMEOUT_MAX overflows.
    return min(_minutes(minutes, "sweep interval") * 60.0, threading.TIMEOUT_MAX)


class Sweeper:
    """A daemon thread that calls ``sweep`` every ``interval`` seconds until stopped.

    ``done`` is a future that completes when the thread ends (what the official stores return).
    """

    def __init__(self, sweep: Callable[[], int], interval: float) -> None:
        self.done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(sweep, interval), daemon=True, name="ttl-sweeper"
        )
        self._thread.start()

    def _run(self, sweep: Callable[[], int], interval: float) -> None:
        try:
            while not self._stop.wait(interval):
                try:
                    removed = sweep()
                    logger.debug("TTL sweep removed %d items", removed)
                except Exception:
                    logger.exception("TTL sweep failed; retrying at the next interval")
        finally:
            self.done.set_result(None)

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the thread to stop; True when it ended within ``timeout``."""
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()


class AsyncSweeper:
    """An asyncio task that awaits ``sweep`` every ``interval`` seconds until stopped."""

    def __init__(self, sweep: Callable[[], Awaitable[int]], interval: float) -> None:
        self._stop = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(sweep, interval))

    async def _run(self, sweep: Callable[[], Awaitable[int]], interval: float) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), interval)
                return
            except asyncio.TimeoutError:
                pass
            try:
                removed = await sweep()
                logger.debug("TTL sweep removed %d items", removed)
            except Exception:
                logger.exception("TTL sweep failed; retrying at the next interval")

    async def stop(self, timeout: float | None = None) -> bool:
        """Ask the task to stop; True when it ended within ``timeout``."""
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.task), timeout)
        except asyncio.TimeoutError:
            return False
        return True
