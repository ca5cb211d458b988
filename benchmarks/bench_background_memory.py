"""What a background manager's history holds over many submissions: the live Python heap after
each fifth of them, with the default bound (``keep=1000``) and with ``keep`` as large as the run
(every result and error kept, as before the bound), sync and async.

The manager under the executor answers at once (a ``ManagerResult``, or an error every 10th call),
so the numbers are the executor's own holding, not a model's or a store's::

    python benchmarks/bench_background_memory.py            # 100,000 submissions
    python benchmarks/bench_background_memory.py --quick    # 10,000 (CI)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tracemalloc
from typing import Any

from langmem_adapters.manager import AsyncBackgroundManager, BackgroundManager
from langmem_adapters.manager.actions import ManagerResult

#: Submissions between two flushes (each to a new thread id, so none is debounced away).
FLUSH_EVERY = 1000


class Instant:
    """A stand-in for ``MemoryManager``: one result per call, an error every 10th call."""

    def __init__(self) -> None:
        self.calls = 0

    def _call(self, config: dict[str, Any]) -> ManagerResult:
        self.calls += 1
        if self.calls % 10 == 0:
            raise RuntimeError(f"failure {self.calls}")
        thread = config["configurable"]["thread_id"]
        return ManagerResult(namespace=("m", thread), thread_id=thread, model_calls=1)

    def invoke(self, input: Any, config: dict[str, Any], **_: Any) -> ManagerResult:
        return self._call(config)

    async def ainvoke(self, input: Any, config: dict[str, Any], **_: Any) -> ManagerResult:
        return self._call(config)


def _submission(n: int) -> tuple[list[dict[str, str]], dict[str, Any]]:
    return [{"role": "user", "content": f"message {n}"}], {"configurable": {"thread_id": f"t{n}"}}


def _heap_mib() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 2**20


def measure_sync(total: int, keep: int) -> list[float]:
    """Live heap (MiB) after each fifth of ``total`` submissions to a ``BackgroundManager``."""
    points: list[float] = []
    executor = BackgroundManager(Instant(), delay=0, keep=keep)  # type: ignore[arg-type]
    for n in range(total):
        executor.submit(*_submission(n))
        if (n + 1) % FLUSH_EVERY == 0:
            executor.flush()
        if (n + 1) % (total // 5) == 0:
            points.append(_heap_mib())
    executor.shutdown()
    assert executor.succeeded + executor.failed == total
    return points


async def measure_async(total: int, keep: int) -> list[float]:
    """As :func:`measure_sync`, for an ``AsyncBackgroundManager``."""
    points: list[float] = []
    executor = AsyncBackgroundManager(Instant(), delay=0, keep=keep)  # type: ignore[arg-type]
    for n in range(total):
        executor.submit(*_submission(n))
        if (n + 1) % FLUSH_EVERY == 0:
            await executor.aflush()
        if (n + 1) % (total // 5) == 0:
            points.append(_heap_mib())
    await executor.ashutdown()
    assert executor.succeeded + executor.failed == total
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 submissions (CI)")
    total = 10_000 if parser.parse_args().quick else 100_000
    print(f"live Python heap (MiB) after each fifth of {total:,} submissions")
    print(
        f"{'executor':<24} {'keep':>8}  " + "  ".join(f"{total * i // 5:>8,}" for i in range(1, 6))
    )
    for keep in (1000, total):
        for name in ("BackgroundManager", "AsyncBackgroundManager"):
            tracemalloc.start()
            if name == "BackgroundManager":
                points = measure_sync(total, keep)
            else:
                points = asyncio.run(measure_async(total, keep))
            tracemalloc.stop()
            print(f"{name:<24} {keep:>8,}  " + "  ".join(f"{p:>8.2f}" for p in points))


if __name__ == "__main__":
    main()
