"""Values between the model and the tiers: ISO 8601 times in and out, paging checks, compact JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langmem_adapters.tools.builder import ToolInputError

__all__ = ["Hit", "aware", "check_page", "iso", "parse_time", "to_json"]


def parse_time(value: str | None, what: str) -> datetime | None:
    """An ISO 8601 date or datetime from the model; naive values are taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"{what} must be an ISO 8601 date/time string, got {value!r}")
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ToolInputError(
            f"{what} must be an ISO 8601 date or date-time such as 2024-05-01T12:00:00Z, got {value!r}"
        ) from None
    return aware(when)


def aware(value: datetime) -> datetime:
    """``value``, taken as UTC if naive."""
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def iso(value: datetime | None) -> str | None:
    """Millisecond ISO 8601 in UTC with a ``Z``, as results show times (``None`` stays ``None``)."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_page(limit: int, offset: int) -> None:
    """Reject a page the model asked for that cannot exist."""
    if limit < 1:
        raise ToolInputError(f"limit must be at least 1, got {limit}")
    if offset < 0:
        raise ToolInputError(f"offset must be 0 or more, got {offset}")


def to_json(value: Any) -> str:
    """Compact JSON for tool results, non-ASCII text kept as is."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Hit:
    """One ``search_memory`` result in the compact form shown to the model."""

    id: str
    text: str
    valid_from: datetime
    valid_to: datetime | None
    score: float | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this hit (ISO times, score rounded to 4 places)."""
        return {
            "id": self.id,
            "text": self.text,
            "valid_from": iso(self.valid_from),
            "valid_to": iso(self.valid_to),
            "score": None if self.score is None else round(self.score, 4),
        }
