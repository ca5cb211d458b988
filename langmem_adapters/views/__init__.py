"""LangChain views of a store: a retriever over a namespace prefix (:class:`StoreRetriever`, from
``store.as_retriever(...)``) and one namespace as a ``ByteStore`` (:class:`StoreByteStore`, from
``store.as_byte_store(...)``). Both take any LangGraph ``BaseStore``."""

from langmem_adapters.views.byte_store import StoreByteStore
from langmem_adapters.views.retriever import StoreRetriever, as_retriever, document_of

__all__ = ["StoreByteStore", "StoreRetriever", "as_retriever", "document_of"]
