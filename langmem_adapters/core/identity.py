"""The identity of a store's embedder, recorded per vector index, and the check that a store opened
with another embedder fails before it writes or searches anything.

An identity is the model's name (where LangChain exposes one), its dimensions, and a fingerprint:
the vectors of a few fixed probe texts. Two embedders are the same model when the dimensions agree
and every probe's vectors have a cosine of at least :data:`TOLERANCE` (float noise of a remote model
passes; another model does not). Each backend records identities in its own place (a Postgres
table, a Redis hash) through an :class:`IdentityAccess`; the rules live here, once.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import Op, PutOp, SearchOp

from langmem_adapters.core.embedding import Embed
from langmem_adapters.core.vectors import IndexSpec, check_vectors
from langmem_adapters.errors import EmbeddingMismatchError

__all__ = [
    "PROBES",
    "REFRESH_SECONDS",
    "TOLERANCE",
    "Identity",
    "IdentityAccess",
    "IdentityGuard",
    "Recorded",
    "guarded",
    "mismatch",
    "model_name",
    "probe",
    "uses_vectors",
]

R = TypeVar("R")

#: The fixed texts whose vectors fingerprint an embedder (embedded once per store instance).
PROBES = (
    "The quick brown fox jumps over the lazy dog.",
    "user prefers dark mode and short answers",
    "42 apples, 7 pears and 1.5 kg of rice",
)
#: The least cosine between two fingerprints' vectors of one probe for the same model.
TOLERANCE = 0.999
#: How long a store trusts its checked identity before reading the recorded one again.
REFRESH_SECONDS = 60.0

_NAME_ATTRIBUTES = ("model", "model_name", "deployment", "model_id", "repo_id")


def model_name(embeddings: Embeddings) -> str:
    """The embedder's class and the model name LangChain exposes (``model``, ``model_name``,
    ``deployment``...), or its ``dims`` (``HashEmbeddings``), e.g. ``OpenAIEmbeddings(text-embedding-3-small)``."""
    kind = type(embeddings).__name__
    for attribute in _NAME_ATTRIBUTES:
        value = getattr(embeddings, attribute, None)
        if isinstance(value, str) and value:
            return f"{kind}({value})"
    dims = getattr(embeddings, "dims", None)
    return f"{kind}(dims={dims})" if isinstance(dims, int) else kind


@dataclass(frozen=True)
class Identity:
    """What an index records of the embedder its vectors were made with."""

    model: str
    dims: int
    probes: tuple[tuple[float, ...], ...]

    def describe(self) -> str:
        """The identity as people read it: ``HashEmbeddings(dims=64), 64 dimensions``."""
        return f"{self.model}, {self.dims} dimensions"

    def same_model(self, other: Identity) -> bool:
        """Same dimensions, and each probe's vectors at a cosine of at least :data:`TOLERANCE`."""
        if self.dims != other.dims or len(self.probes) != len(other.probes):
            return False
        return all(_cosine(a, b) >= TOLERANCE for a, b in zip(self.probes, other.probes))

    def to_json(self) -> str:
        """The identity as stored (JSON text)."""
        return json.dumps({"model": self.model, "dims": self.dims, "probes": self.probes})

    @classmethod
    def from_json(cls, raw: Any) -> Identity:
        """An identity as stored (JSON text, bytes, or already parsed)."""
        data = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
        probes = tuple(tuple(float(x) for x in v) for v in data["probes"])
        return cls(str(data["model"]), int(data["dims"]), probes)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0.0 or nb == 0.0:
        return 1.0 if na == nb else 0.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def probe(embeddings: Embeddings, dims: int | None) -> Generator[Embed, Any, Identity]:
    """The identity of ``embeddings``: one embed call of the probe texts (``dims`` checked when given,
    else taken from the vectors: a new model's size is learnt this way)."""
    vectors = yield Embed(list(PROBES), using=embeddings)
    size = dims if dims is not None else len(vectors[0]) if vectors else 0
    checked = check_vectors(vectors, len(PROBES), size)
    return Identity(model_name(embeddings), size, tuple(tuple(v) for v in checked))


def mismatch(recorded: Identity, mine: Identity, where: str) -> EmbeddingMismatchError:
    """The error of a store opened with ``mine`` on vectors made with ``recorded``."""
    return EmbeddingMismatchError(
        f"{where} holds vectors made with {recorded.describe()}, but this store was opened with "
        f"{mine.describe()}; searching or writing would mix incompatible vectors. Open it with the "
        "original embedder, or call reindex() (CLI: langmem-adapters reindex) to re-embed every "
        "item with the new one"
    )


@dataclass(frozen=True)
class Recorded:
    """A recorded identity and the generation of the vectors it describes (bumped by ``reindex``)."""

    identity: Identity
    generation: int


class IdentityAccess(Protocol):
    """Where a backend keeps the identities of a store's vector indexes."""

    name: str
    """The index (Postgres vector table, Redis vector index) this store's vectors belong to."""

    def read(self) -> Generator[Any, Any, dict[str, Recorded]]:
        """Sub-plan: every identity recorded for the prefix's vector indexes, by index name."""
        ...

    def record(self, identity: Identity, generation: int) -> Generator[Any, Any, Recorded]:
        """Sub-plan: record ``identity`` (of the vectors at ``generation``) for :attr:`name` unless
        one is; the one now recorded."""
        ...


class IdentityGuard:
    """One store instance's view of its index identity: probed once, checked at first use and
    again at most every :data:`REFRESH_SECONDS`, or at once after :meth:`expire`."""

    def __init__(self) -> None:
        self.mine: Identity | None = None
        self.generation = 0
        #: How many times this store switched embedder (a read that overlapped a switch reruns).
        self.switches = 0
        self._checked = -math.inf
        #: While this store's own ``reindex`` switches: the identity it switches to, and how the
        #: store takes it on (a plan of another thread may see the switch first).
        self.pending: tuple[Identity, Callable[[], None]] | None = None

    def due(self) -> bool:
        """Whether the next plan must check the recorded identity first."""
        return time.monotonic() - self._checked > REFRESH_SECONDS

    def expire(self) -> None:
        """Check again on the next plan (the index changed under the store, e.g. a reindex)."""
        self._checked = -math.inf

    def adopt(self, identity: Identity, generation: int) -> None:
        """Trust ``identity`` at ``generation`` from now (the store switched to it itself)."""
        if self.mine is not None and not identity.same_model(self.mine):
            self.switches += 1
        self.mine, self.generation, self._checked = identity, generation, time.monotonic()

    def settle(self, access: IdentityAccess) -> Generator[Any, Any, None]:
        """Sub-plan, while this store's own reindex switches: take the new embedder on if the
        switch has committed (a read done before this found the old vectors: it stands)."""
        recorded = yield from access.read()
        pending = self.pending
        if pending is not None and any(
            r.identity.same_model(pending[0]) for r in recorded.values()
        ):
            pending[1]()

    def check(
        self, embeddings: Embeddings, dims: int, access: IdentityAccess, writes: bool
    ) -> Generator[Any, Any, int]:
        """Sub-plan: raise ``EmbeddingMismatchError`` when the index's recorded embedder is not this
        store's, or when only other indexes of the prefix have one (their items would be unsearchable
        here). Records this store's identity when none is and the plan ``writes``. Returns the
        generation of the index's vectors."""
        if self.mine is None:
            self.mine = yield from probe(embeddings, dims)
        recorded = yield from access.read()
        own = recorded.get(access.name)
        if own is None:
            if recorded:
                other = min(recorded.items())[1]
                raise mismatch(other.identity, self.mine, "this store's prefix")
            if not writes:
                return self.generation  # nothing recorded and nothing written: check again later
            own = yield from access.record(self.mine, self.generation)
        pending = self.pending
        switched = pending is not None and not own.identity.same_model(self.mine)
        if switched and pending is not None and own.identity.same_model(pending[0]):
            pending[1]()  # the switch committed: take the new embedder on, as reindex will
            return self.generation
        if not own.identity.same_model(self.mine):
            raise mismatch(own.identity, self.mine, f"the vector index {access.name!r}")
        self.adopt(self.mine, own.generation)
        return own.generation


def uses_vectors(ops: Sequence[Op]) -> tuple[bool, bool, bool]:
    """Whether a batch touches vectors (a put, or a search with a query), whether it writes (a
    put), and whether it changes anything (a put or a delete); one pass over the ops."""
    searches = writes = changes = False
    for op in ops:
        if isinstance(op, PutOp):
            changes = True
            writes = writes or op.value is not None
        elif isinstance(op, SearchOp) and op.query:
            searches = True
    return searches or writes, writes, changes


def guarded(
    guard: IdentityGuard,
    spec: IndexSpec | None,
    access: Callable[[], IdentityAccess],
    build: Callable[[], Generator[Any, Any, R]],
    ops: Sequence[Op] | None = None,
) -> Generator[Any, Any, R]:
    """A store plan behind the identity check: the check first when due and the plan touches
    vectors (``ops``: a batch, see :func:`uses_vectors`; ``None``: a restore page, which writes), so
    nothing is searched or written before it passes; then the plan ``build`` makes (after the check,
    so it sees a switch the check took on). A read that overlapped this store's own ``reindex``
    switch is read again with the new embedder, so no answer pairs one model's query with the other's
    vectors. A failed plan makes the next one check again: a ``reindex`` elsewhere may have dropped
    the vectors it used."""
    touches, writes, changes = uses_vectors(ops) if ops is not None else (True, True, True)
    if not touches or spec is None:
        # Gets, listings, plain searches, or a store without vectors: nothing to check.
        return build()
    return _checked(guard, spec, access, build, writes, changes)


def _checked(
    guard: IdentityGuard,
    spec: IndexSpec,
    access: Callable[[], IdentityAccess],
    build: Callable[[], Generator[Any, Any, R]],
    writes: bool,
    changes: bool,
) -> Generator[Any, Any, R]:
    """:func:`guarded`'s plan for a batch that touches vectors."""
    if guard.due():
        yield from guard.check(spec.embeddings, spec.dims, access(), writes)
    switches = guard.switches
    try:
        result = yield from build()
        if changes:
            return result
        if guard.pending is not None and guard.switches == switches:
            yield from guard.settle(access())
        if guard.switches != switches:
            # This store switched embedder during the read, which may have paired a query of one
            # model with vectors of the other: read again, now with the new one throughout.
            result = yield from build()
        return result
    except Exception:
        guard.expire()
        raise
