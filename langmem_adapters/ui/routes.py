"""The web app: one endpoint per page (the tree, a namespace, an item, a delete confirmation) and
the one write endpoint, which ``read_only`` leaves out. Request parameters are read and checked
here; the store calls are :class:`~langmem_adapters.ui.access.Browser`'s."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from langmem_adapters.core.async_store import AsyncStore
from langmem_adapters.core.sync_store import SyncStore
from langmem_adapters.errors import InvalidArgumentError, LangmemAdaptersError, first_line
from langmem_adapters.memory.episodic import episode_from
from langmem_adapters.ui.access import PAGE_SIZE, Browser
from langmem_adapters.ui.render import namespace_url, page, when
from langmem_adapters.ui.security import Guard
from langmem_adapters.ui.tiers import episode_timeline, fact_lineage, tier_of, version_history

__all__ = ["create_app"]

#: Sub-namespaces a namespace delete confirmation names.
CONFIRM_SHOWN = 20


def _namespace(request: Request) -> tuple[str, ...]:
    labels = tuple(request.query_params.getlist("ns"))
    if not all(labels):
        raise InvalidArgumentError("a namespace label is empty")
    return labels


def _offset(request: Request) -> int:
    text = request.query_params.get("offset") or "0"
    if not text.isdigit():
        raise InvalidArgumentError(f"offset must be a non-negative integer, got {text!r}")
    return int(text)


def _filter(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f'the filter is not valid JSON: {exc.msg} (e.g. {{"kind": "fact"}})'
        ) from None
    if not isinstance(value, dict):
        raise InvalidArgumentError('the filter must be a JSON object, e.g. {"kind": "fact"}')
    return value


def _as_of(text: str) -> datetime | None:
    """The as-of control's value: an ISO date and time, read as UTC when it has no offset."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(f"as of must be a date and time, got {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


class Pages:
    """The endpoints over one store."""

    def __init__(self, browser: Browser, guard: Guard, *, read_only: bool) -> None:
        self.browser = browser
        self.guard = guard
        self.read_only = read_only

    def _page(self, template: str, status_code: int = 200, **context: Any) -> Response:
        return page(
            template,
            status_code,
            store=self.browser.name,
            read_only=self.read_only,
            csrf=self.guard.csrf,
            **context,
        )

    def _error(self, exc: Exception) -> Response:
        return self._page("error.html", 400, message=first_line(exc))

    def index(self, request: Request) -> Response:
        """The store and the first level of its namespace tree."""
        return self._page(
            "index.html",
            total=self.browser.total(),
            mode=self.browser.search_mode,
            children=self.browser.children(()),
            deleted=request.query_params.get("deleted"),
        )

    def tree(self, request: Request) -> Response:
        """The children of a namespace, as a fragment the tree inserts when a node opens."""
        try:
            children = self.browser.children(_namespace(request), _offset(request))
        except (LangmemAdaptersError, ValueError) as exc:
            return self._error(exc)
        return self._page("tree.html", prefix=_namespace(request), children=children)

    def count(self, request: Request) -> Response:
        """How many live items lie at or below a namespace, as plain text (fetched by the page)."""
        try:
            return PlainTextResponse(str(self.browser.count(_namespace(request))))
        except (LangmemAdaptersError, ValueError) as exc:
            return PlainTextResponse(first_line(exc), status_code=400)

    def expiry(self, request: Request) -> Response:
        """An item's expiry and TTL, as plain text (fetched by the item's page)."""
        try:
            stored = self.browser.stored(_namespace(request), request.query_params.get("key", ""))
        except (LangmemAdaptersError, ValueError) as exc:
            return PlainTextResponse(first_line(exc), status_code=400)
        if stored is None:
            return PlainTextResponse("unknown", status_code=404)
        ttl = f" (TTL {stored.ttl_minutes:g} min)" if stored.ttl_minutes is not None else ""
        return PlainTextResponse((when(stored.expires_at) if stored.expires_at else "never") + ttl)

    def namespace(self, request: Request) -> Response:
        """A page of a namespace's items: listed by key, or a search by query and filter; one
        store call (the count and the sub-namespaces are fetched by the page afterwards)."""
        params = request.query_params
        query, filter_text = params.get("q", ""), params.get("filter", "")
        view = params.get("view", "")
        try:
            ns = _namespace(request)
            context: dict[str, Any] = {
                "ns": ns,
                "q": query,
                "filter_text": filter_text,
                "view": view,
            }
            if query or filter_text.strip() or view in ("timeline", "newest"):
                filter_ = _filter(filter_text)
                if view == "timeline":
                    filter_ = {**(filter_ or {}), "kind": "episode"}
                found = self.browser.search(
                    ns, query=query or None, filter=filter_, offset=_offset(request)
                )
                context["hits"] = found
                if view == "timeline":
                    context["episodes"] = episode_timeline(found.hits)
            else:
                after = (params["after_ns"], params["after_key"]) if "after_key" in params else None
                context["listing"] = self.browser.items(ns, after)
        except (LangmemAdaptersError, ValueError, TypeError) as exc:
            return self._error(exc)
        return self._page(
            "namespace.html",
            mode=self.browser.search_mode,
            page_size=PAGE_SIZE,
            deleted=params.get("deleted"),
            **context,
        )

    def item(self, request: Request) -> Response:
        """One item: its value, times and expiry, and the tier view of a memory record."""
        params = request.query_params
        try:
            ns, key = _namespace(request), params.get("key", "")
            item = self.browser.item(ns, key)
            if item is None:
                return self._page("error.html", 404, message=f"no item {key!r} in {'.'.join(ns)}")
            context: dict[str, Any] = {"ns": ns, "key": key, "item": item}
            tier = tier_of(ns, item.value)
            context["tier"] = tier
            context["as_of_text"] = params.get("as_of", "")
            with self.browser.locked() as store:
                if tier == "fact":
                    context["lineage"] = fact_lineage(
                        store, ns, item.value["id"], _as_of(params.get("as_of", ""))
                    )
                elif tier == "episode":
                    context["episode"] = episode_from(item.value)
                elif tier == "version":
                    context["versions"] = version_history(store, ns, item.value["name"])
        except (LangmemAdaptersError, ValueError, TypeError) as exc:
            return self._error(exc)
        return self._page("item.html", **context)

    def confirm(self, request: Request) -> Response:
        """What a delete would remove, named, with the button that does it."""
        try:
            ns, key = _namespace(request), request.query_params.get("key")
            if not ns:
                raise InvalidArgumentError("there is no deleting the whole store: pick a namespace")
            if key is not None:
                if self.browser.item(ns, key) is None:
                    return self._page(
                        "error.html", 404, message=f"no item {key!r} in {'.'.join(ns)}"
                    )
                return self._page("confirm.html", ns=ns, key=key)
            count = self.browser.count(ns)
            below = self.browser.namespaces_below(ns, CONFIRM_SHOWN + 1)
        except (LangmemAdaptersError, ValueError) as exc:
            return self._error(exc)
        return self._page(
            "confirm.html",
            ns=ns,
            key=None,
            count=count,
            below=below[:CONFIRM_SHOWN],
            more=len(below) > CONFIRM_SHOWN,
        )

    async def delete(self, request: Request) -> Response:
        """Delete an item or a namespace (POST, with this server's CSRF token), then go up."""
        form = await request.form()
        refused = self.guard.write_refusal(request, form.get("csrf"))
        if refused is not None:
            return refused
        labels = [v for v in form.getlist("ns") if isinstance(v, str)]
        key = form.get("key")
        try:
            ns = tuple(labels)
            if not ns or not all(ns):
                raise InvalidArgumentError("a delete needs a namespace with non-empty labels")
            if isinstance(key, str):
                await run_in_threadpool(self.browser.delete_item, ns, key)
                return RedirectResponse(namespace_url(ns, deleted=f"item {key}"), 303)
            n = await run_in_threadpool(self.browser.delete_namespace, ns)
        except (LangmemAdaptersError, ValueError) as exc:
            return self._error(exc)
        gone = f"namespace {'.'.join(ns)} ({n} items)"
        if len(ns) > 1:
            return RedirectResponse(namespace_url(ns[:-1], deleted=gone), 303)
        return RedirectResponse(f"/?deleted={gone}", 303)


def create_app(
    store: SyncStore | AsyncStore,
    *,
    name: str = "store",
    read_only: bool = False,
    token: str | None = None,
    allowed_hosts: frozenset[str] | None = None,
) -> Starlette:
    """The browser over ``store`` as an ASGI app. ``read_only`` leaves every write out;
    ``token`` (if given) is required of every request; ``allowed_hosts`` are the Host headers
    accepted (``None``: any)."""
    guard = Guard(token=token, allowed_hosts=allowed_hosts)
    pages = Pages(Browser(store, name=name), guard, read_only=read_only)
    routes = [
        Route("/", pages.index),
        Route("/tree", pages.tree),
        Route("/ns", pages.namespace),
        Route("/count", pages.count),
        Route("/item", pages.item),
        Route("/expiry", pages.expiry),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]
    if not read_only:
        routes += [
            Route("/confirm", pages.confirm),
            Route("/delete", pages.delete, methods=["POST"]),
        ]
    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])
