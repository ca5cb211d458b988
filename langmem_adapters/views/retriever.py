"""A store as a LangChain retriever: :class:`StoreRetriever` runs the store's own ``search`` (so a
hybrid store ranks as its search does) and returns ``Document``s, for ``create_retriever_tool``,
LCEL chains and anything else that takes a ``BaseRetriever``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.store.base import BaseStore, SearchItem
from langgraph.store.base.embed import get_text_at_path
from pydantic import ConfigDict

from langmem_adapters.core.ops import check_prefix
from langmem_adapters.errors import InvalidArgumentError
from langmem_adapters.memory.checks import check_filter, check_k

__all__ = ["StoreRetriever", "as_retriever", "document_of"]


def _indexed_fields(store: BaseStore) -> tuple[str, ...]:
    """The value paths the store embeds (``("$",)``, the whole value, when it has no index)."""
    spec = getattr(store, "index_spec", None)
    if spec is not None:
        return tuple(spec.fields)
    config = getattr(store, "index_config", None)  # langgraph's InMemoryStore
    fields = (config or {}).get("fields") if isinstance(config, Mapping) else None
    return tuple(fields or ("$",))


def document_of(item: SearchItem, fields: Sequence[str]) -> Document:
    """A search hit as a ``Document``: the text at ``fields`` (joined by newlines) as content;
    namespace, key, score and ISO 8601 timestamps as metadata."""
    texts = [text for path in fields for text in get_text_at_path(item.value, path)]
    return Document(
        page_content="\n".join(texts),
        id=item.key,
        metadata={
            "namespace": list(item.namespace),
            "key": item.key,
            "score": item.score,
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
        },
    )


class StoreRetriever(BaseRetriever):
    """The ``k`` items under ``namespace_prefix`` (matching ``filter``) that the store's ``search``
    ranks first for a query, as ``Document``s; ``invoke(query, k=..., filter=...)`` overrides per
    call. ``content_fields`` are the value paths that make the content (default: the paths the
    store embeds, else the whole value as JSON)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: BaseStore
    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    k: int = 4
    content_fields: tuple[str, ...] | None = None

    def _search_args(self, query: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The store ``search`` arguments for one call, per-call ``k``/``filter`` checked first."""
        unknown = set(overrides) - {"k", "filter"}
        if unknown:
            raise InvalidArgumentError(
                f"StoreRetriever takes k and filter per call, not {sorted(unknown)}"
            )
        filter_ = overrides.get("filter", self.filter)
        check_filter(filter_)
        return {
            "query": query,
            "filter": filter_,
            "limit": check_k(overrides.get("k", self.k)),
        }

    def _documents(self, items: Sequence[SearchItem]) -> list[Document]:
        fields = self.content_fields or _indexed_fields(self.store)
        return [document_of(item, fields) for item in items]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        items = self.store.search(self.namespace_prefix, **self._search_args(query, kwargs))
        return self._documents(items)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        items = await self.store.asearch(self.namespace_prefix, **self._search_args(query, kwargs))
        return self._documents(items)


def as_retriever(
    store: BaseStore,
    namespace_prefix: tuple[str, ...],
    *,
    filter: dict[str, Any] | None = None,
    k: int = 4,
    content_fields: Sequence[str] | None = None,
) -> StoreRetriever:
    """A :class:`StoreRetriever` over ``store`` (any ``BaseStore``), its arguments checked now
    rather than at the first query."""
    check_filter(filter)
    return StoreRetriever(
        store=store,
        namespace_prefix=check_prefix(namespace_prefix),
        filter=filter,
        k=check_k(k),
        content_fields=None if content_fields is None else tuple(content_fields),
    )
