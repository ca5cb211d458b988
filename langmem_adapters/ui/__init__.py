"""A local memory browser over any of this package's stores (the ``[ui]`` extra).

``langmem-adapters ui [STORE]`` runs it; from Python, :func:`create_app` gives the ASGI app and
:func:`serve` runs it. Pages: the namespace tree with counts (opened lazily), a namespace's items
by key or by search, one item with the memory tiers' readable views, and confirmed deletes.
"""

from langmem_adapters.ui.routes import create_app
from langmem_adapters.ui.server import serve

__all__ = ["create_app", "serve"]
