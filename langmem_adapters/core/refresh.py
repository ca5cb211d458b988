"""When a store's cached reading of the server is taken again: index and prefix sizes, word
statistics, the copy of the lexical side's statistics. Each is re-read at most once a minute, so a
search's plan rarely spends a round trip on it, and a change made elsewhere shows within a minute."""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["REFRESH_S", "Refreshed"]

#: How old a reading may get before it is taken again (seconds).
REFRESH_S = 60.0


@dataclass
class Refreshed:
    """When a reading was last taken (``time.monotonic()``; ``None``: never)."""

    checked: float | None = None

    def stale(self) -> bool:
        """Whether to take it again: never taken, or over :data:`REFRESH_S` ago."""
        return self.checked is None or time.monotonic() - self.checked > REFRESH_S

    def mark(self) -> None:
        """It was taken just now."""
        self.checked = time.monotonic()
