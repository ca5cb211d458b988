"""ProceduralMemory: named skills and prompts with immutable, numbered versions.

Layout under ``(*root, "procedural")`` (one namespace for all names, so a name never becomes a
namespace label and any string is a valid name):

* version ``v`` of ``name`` is the item ``f"{digest(name)}:{v}"`` (``kind="version"``), created
  with an atomic put-if-absent, so of two writers publishing the same version exactly one wins;
* ``f"{digest(name)}:head"`` is a hint holding the last published version number. Readers start
  from it and probe the following version keys, so a stale hint never hides a version.

Versions are looked up by name and number, not by similarity, so bodies are stored unindexed.

    >>> skills = ProceduralMemory(store, namespace=("acme",))
    >>> skills.publish("triage", "Ask for the order id first.")          # version 1
    >>> skills.publish("triage", "Ask for the email.", expected_version=1)  # version 2
    >>> skills.rollback("triage", 1).version                             # 3, body of version 1
    3
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langmem_adapters.errors import (
    ConcurrentWriteError,
    InvalidMemoryWriteError,
    MemoryTypeError,
    RecordNotFoundError,
)
from langmem_adapters.memory.checks import check_attribution, check_json, check_metadata, check_text
from langmem_adapters.memory.flows import Flow, arun_flow, call, run_flow
from langmem_adapters.memory.records import Attribution, MemoryRecord, stored_fields
from langmem_adapters.memory.tier import MemoryTier, digest, search_all
from langmem_adapters.memory.times import fmt_time, to_ms

__all__ = ["ProceduralMemory", "Procedure"]

#: How often ``publish`` without ``expected_version`` retries after losing a race.
_MAX_ATTEMPTS = 16


@dataclass(frozen=True, kw_only=True)
class Procedure(MemoryRecord):
    """One published version of a skill or prompt; ``text`` is its body."""

    name: str
    version: int
    rolled_back_from: int | None = None

    @property
    def body(self) -> str:
        """The skill or prompt text (same as ``text``)."""
        return self.text

    @property
    def published_at(self) -> datetime:
        """When this version was published (same as ``recorded_at``)."""
        return self.recorded_at

    def context_header(self) -> str:
        """Name, version and publication date."""
        return f"procedure {self.name!r} v{self.version}, published {fmt_time(self.recorded_at)}"


def _procedure_from(value: Mapping[str, Any]) -> Procedure:
    return Procedure(
        **stored_fields(value, text="body", recorded_at="published_at_ms"),
        name=value["name"],
        version=value["version"],
        rolled_back_from=value.get("rolled_back_from"),
    )


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise MemoryTypeError(f"name must be a str, got {type(name).__name__}")
    return str(check_json(name, "name"))


def _check_version(version: object, what: str, *, minimum: int) -> int:
    if not isinstance(version, int) or isinstance(version, bool):
        raise MemoryTypeError(f"{what} must be an int, got {type(version).__name__}")
    if version < minimum:
        raise InvalidMemoryWriteError(f"{what} must be at least {minimum}, got {version}")
    return version


class ProceduralMemory(MemoryTier):
    """Versioned skills and prompts under ``(*namespace, "procedural")``; see the module docstring."""

    _label = "procedural"

    def _key(self, name: str, version: int | str) -> str:
        return f"{digest(name)}:{version}"

    def _version(self, name: str, version: int) -> Flow[Procedure | None]:
        item = yield from call(self.store, "get", self._ns, self._key(name, version))
        if item is None or item.value.get("kind") != "version" or item.value.get("name") != name:
            return None
        return _procedure_from(item.value)

    def _latest(self, name: str) -> Flow[Procedure | None]:
        head = yield from call(self.store, "get", self._ns, self._key(name, "head"))
        version = head.value.get("version", 0) if head is not None else 0
        latest = (yield from self._version(name, version)) if version else None
        while True:
            following = yield from self._version(name, version + 1)
            if following is None:
                return latest
            latest, version = following, version + 1

    def _publish(
        self,
        name: str,
        body: str,
        expected_version: int | None,
        attribution: Attribution | None,
        metadata: Mapping[str, Any] | None,
        rolled_back_from: int | None = None,
    ) -> Flow[Procedure]:
        name = _check_name(name)
        body = check_text(body, "body")
        if expected_version is not None:
            _check_version(expected_version, "expected_version", minimum=0)
        value: dict[str, Any] = {
            "kind": "version",
            "name": name,
            "name_key": digest(name),
            "body": body,
            "attribution": check_attribution(attribution).to_dict(),
            "metadata": check_metadata(metadata),
            "rolled_back_from": rolled_back_from,
        }
        for _ in range(_MAX_ATTEMPTS):
            latest = yield from self._latest(name)
            current = latest.version if latest else 0
            if expected_version is not None and expected_version != current:
                raise ConcurrentWriteError(
                    f"{name!r} is at version {current}, not the expected {expected_version}; "
                    "re-read and retry"
                )
            version = current + 1
            key = self._key(name, version)
            value.update(id=key, version=version, published_at_ms=self._now_ms())
            created = yield from call(
                self.store, "put_if_absent", self._ns, key, dict(value), False
            )
            if created:
                yield from call(
                    self.store,
                    "put",
                    self._ns,
                    self._key(name, "head"),
                    {"kind": "head", "version": version},
                    False,
                )
                return _procedure_from(value)
            if expected_version is not None:
                break
        raise ConcurrentWriteError(
            f"another writer published {name!r} version {version} first; re-read and retry"
        )

    def _rollback(
        self,
        name: str,
        to_version: int,
        expected_version: int | None,
        attribution: Attribution | None,
    ) -> Flow[Procedure]:
        name = _check_name(name)
        _check_version(to_version, "to_version", minimum=1)
        target = yield from self._version(name, to_version)
        if target is None:
            raise RecordNotFoundError(f"{name!r} has no version {to_version} in {self.root}")
        return (
            yield from self._publish(
                name, target.body, expected_version, attribution, target.metadata, to_version
            )
        )

    def _get(self, name: str, version: int) -> Flow[Procedure | None]:
        name = _check_name(name)
        if not isinstance(version, int) or isinstance(version, bool):
            raise MemoryTypeError(f"version must be an int, got {type(version).__name__}")
        if version < 1:
            return None
        return (yield from self._version(name, version))

    def _current(self, name: str) -> Flow[Procedure | None]:
        return (yield from self._latest(_check_name(name)))

    def _history(self, name: str) -> Flow[list[Procedure]]:
        name = _check_name(name)
        items = yield from search_all(
            self.store, self._ns, filter={"kind": "version", "name_key": digest(name)}
        )
        versions = [
            _procedure_from(i.value)
            for i in items
            if i.value.get("kind") == "version" and i.value.get("name") == name
        ]
        return sorted(versions, key=lambda p: p.version)

    def _as_of(self, name: str, when: datetime) -> Flow[Procedure | None]:
        at = to_ms(when, "when")
        versions = yield from self._history(name)
        valid = [p for p in versions if to_ms(p.published_at, "published_at") <= at]
        return valid[-1] if valid else None

    # ------------------------------------------------------------------ public API

    def publish(
        self,
        name: str,
        body: str,
        *,
        expected_version: int | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Procedure:
        """Publish ``body`` as the next version of ``name`` (version 1 if new).

        With ``expected_version`` (0 for "must not exist yet") it raises ``ConcurrentWriteError``
        unless that is still the current version, so of racing publishers exactly one wins.
        Without it, a publisher that loses a race retries on the next version number.
        """
        return run_flow(self._publish(name, body, expected_version, attribution, metadata))

    async def apublish(
        self,
        name: str,
        body: str,
        *,
        expected_version: int | None = None,
        attribution: Attribution | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Procedure:
        """Async ``publish``."""
        return await arun_flow(self._publish(name, body, expected_version, attribution, metadata))

    def current(self, name: str) -> Procedure | None:
        """The latest version of ``name``, or ``None`` if it was never published."""
        return run_flow(self._current(name))

    async def acurrent(self, name: str) -> Procedure | None:
        """Async ``current``."""
        return await arun_flow(self._current(name))

    def get(self, name: str, version: int) -> Procedure | None:
        """Version ``version`` of ``name``, or ``None``."""
        return run_flow(self._get(name, version))

    async def aget(self, name: str, version: int) -> Procedure | None:
        """Async ``get``."""
        return await arun_flow(self._get(name, version))

    def as_of(self, name: str, when: datetime) -> Procedure | None:
        """The version of ``name`` that was current at ``when``, or ``None`` if none was published yet."""
        return run_flow(self._as_of(name, when))

    async def aas_of(self, name: str, when: datetime) -> Procedure | None:
        """Async ``as_of``."""
        return await arun_flow(self._as_of(name, when))

    def history(self, name: str) -> list[Procedure]:
        """Every version of ``name``, oldest first (rollbacks included)."""
        return run_flow(self._history(name))

    async def ahistory(self, name: str) -> list[Procedure]:
        """Async ``history``."""
        return await arun_flow(self._history(name))

    def rollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        attribution: Attribution | None = None,
    ) -> Procedure:
        """Publish a new version whose body equals version ``to_version``; history keeps everything."""
        return run_flow(self._rollback(name, to_version, expected_version, attribution))

    async def arollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        attribution: Attribution | None = None,
    ) -> Procedure:
        """Async ``rollback``."""
        return await arun_flow(self._rollback(name, to_version, expected_version, attribution))
