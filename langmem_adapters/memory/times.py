"""Time handling of the memory tiers: aware datetimes in the API, epoch milliseconds in the store.

Integer milliseconds compare and range-filter the same way on every backend, whereas stored ISO
strings or floats would not.
"""

from __future__ import annotations

from datetime import datetime, timezone

from langmem_adapters.errors import MemoryTypeError

__all__ = ["fmt_time", "from_ms", "to_ms", "utc_now"]


def to_ms(value: datetime, what: str) -> int:
    """Epoch milliseconds of a timezone-aware datetime; naive datetimes are ambiguous and rejected."""
    if not isinstance(value, datetime):
        raise MemoryTypeError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise MemoryTypeError(f"{what} must be timezone-aware, got naive {value.isoformat()}")
    return int(value.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    """The UTC datetime of an epoch-millisecond value."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def fmt_time(value: datetime) -> str:
    """Minute-precision UTC date for prompts."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def utc_now() -> datetime:
    """The default clock of every tier."""
    return datetime.now(timezone.utc)
