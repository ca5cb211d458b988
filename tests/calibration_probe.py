"""A calibration probe over numpy and a clock the test drives: the :class:`Calibrator`'s logic
without a server and without sleeping."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

Hit = tuple[int, float]  # (row, distance), as a backend's probe returns them


class NumpyProbe:
    """A probe over numpy. Exact search is exact (and, as a scan over a large index is, dearer than
    the index: it reads a 40x copy); the "index" at breadth ``b`` finds a query's exact top k when
    ``b`` reaches the query's need (:func:`need`), else only every other of its top 2k. ``kept_value``
    is where the measurement is kept (the database, here a field)."""

    max_breadth = 1000

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors
        self.kept_value: str | None = None
        self.calls: list[str] = []

    def count(self) -> Any:
        self.calls.append("count")
        return len(self.vectors)
        yield  # a plan without rounds

    def sample(self, n: int) -> Any:
        self.calls.append("sample")
        return self.vectors[:n].tolist()
        yield

    def query(self, vector: list[float]) -> tuple[float, ...]:
        return tuple(vector)

    def _top(self, q: Sequence[float], k: int, copies: int = 1) -> list[Hit]:
        d = np.linalg.norm(np.tile(self.vectors, (copies, 1)) - np.asarray(q), axis=1)[
            : len(self.vectors)
        ]
        order = np.argsort(d)[:k]
        return [(int(i), float(d[i])) for i in order]

    def exact(self, queries: Sequence[Any], k: int) -> Any:
        self.calls.append("exact")
        return [self._top(q, k, copies=40) for q in queries]
        yield

    def ann(self, queries: Sequence[Any], k: int, breadth: int) -> Any:
        self.calls.append("ann")
        return [
            self._top(q, k) if breadth >= need(q) else self._top(q, 2 * k)[::2] for q in queries
        ]
        yield

    def kept(self) -> Any:
        self.calls.append("kept")
        return self.kept_value
        yield

    def keep(self, measurement: str) -> Any:
        self.calls.append("keep")
        self.kept_value = measurement
        return None
        yield


def need(q: Sequence[float]) -> int:
    """The breadth a query needs: 30 near the data, 700 far out (first coordinate above 5)."""
    return 700 if q[0] > 5 else 30


class Clock:
    """Monotonic seconds that move only when the test moves ``now``."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
