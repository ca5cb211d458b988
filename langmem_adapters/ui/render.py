"""Pages as HTML: the Jinja2 templates (autoescaped: every stored text is untrusted) and the
helpers they use to build links and show values, times and namespaces."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader
from starlette.responses import HTMLResponse

from langmem_adapters.cli.render import short

__all__ = ["item_url", "namespace_url", "page", "tree_url"]


def _params(namespace: Sequence[str], extra: dict[str, Any]) -> str:
    pairs = [("ns", label) for label in namespace]
    pairs += [(k, str(v)) for k, v in extra.items() if v is not None and v != ""]
    return urlencode(pairs)


def namespace_url(namespace: Sequence[str], **extra: Any) -> str:
    """The page of a namespace (``extra``: paging and search parameters)."""
    return f"/ns?{_params(namespace, extra)}"


def tree_url(namespace: Sequence[str], **extra: Any) -> str:
    """The tree fragment listing a namespace's children."""
    return f"/tree?{_params(namespace, extra)}"


def count_url(namespace: Sequence[str]) -> str:
    """How many items lie at or below a namespace (plain text)."""
    return f"/count?{_params(namespace, {})}"


def expiry_url(namespace: Sequence[str], key: str) -> str:
    """An item's expiry and TTL (plain text)."""
    return f"/expiry?{_params(namespace, {'key': key})}"


def item_url(namespace: Sequence[str], key: str, **extra: Any) -> str:
    """The page of one item."""
    return f"/item?{_params(namespace, {'key': key, **extra})}"


def confirm_url(namespace: Sequence[str], key: str | None = None) -> str:
    """The confirmation page of deleting a namespace (or, with ``key``, one item)."""
    return f"/confirm?{_params(namespace, {'key': key})}"


def when(value: datetime | None) -> str:
    """A UTC time to the second, or an em dash for none."""
    if value is None:
        return "—"
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def dotted(namespace: Sequence[str]) -> str:
    """A namespace as its labels joined by ``.`` (``(root)`` for the empty one)."""
    return ".".join(namespace) or "(root)"


def pretty(value: Any) -> str:
    """A value as indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


_env = Environment(
    loader=PackageLoader("langmem_adapters.ui", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.globals.update(
    namespace_url=namespace_url,
    tree_url=tree_url,
    count_url=count_url,
    expiry_url=expiry_url,
    item_url=item_url,
    confirm_url=confirm_url,
    when=when,
    dotted=dotted,
    pretty=pretty,
    preview=lambda value: short(value, 120),
)


def page(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` with ``context`` (autoescaped) as an HTML response."""
    return HTMLResponse(_env.get_template(template).render(**context), status_code=status_code)
