"""Memory tiers over any ``BaseStore``: facts, episodes, versioned procedures and run scratch.

Each tier is ``Tier(store, namespace=root, ...)``; it keeps its records under
``(*root, <tier label>)`` with the labels ``"semantic"``, ``"episodic"``, ``"procedural"`` and
``"working"``, and never reads or writes anywhere else. Every method has an ``a``-prefixed async
twin. Times are timezone-aware datetimes in the API and epoch milliseconds in the store.
"""

from langmem_adapters.compat import moved
from langmem_adapters.memory.episodic import Episode, EpisodicMemory, blended_score
from langmem_adapters.memory.procedural import ProceduralMemory, Procedure
from langmem_adapters.memory.records import Attribution, MemoryRecord, to_context
from langmem_adapters.memory.semantic import Fact, SemanticMemory
from langmem_adapters.memory.working import WorkingMemory

__all__ = [
    "Attribution",
    "Episode",
    "EpisodicMemory",
    "Fact",
    "MemoryRecord",
    "ProceduralMemory",
    "Procedure",
    "SemanticMemory",
    "WorkingMemory",
    "blended_score",
    "to_context",
]

# The errors the tiers raise live in langmem_adapters.errors; their old paths from here still work.
__getattr__ = moved(
    __name__,
    dict.fromkeys(
        [
            "ConcurrentWriteError",
            "InvalidMemoryQueryError",
            "InvalidMemoryWriteError",
            "InvalidNamespaceError",
            "MemoryTypeError",
            "RecordNotFoundError",
        ],
        "langmem_adapters.errors",
    ),
)
