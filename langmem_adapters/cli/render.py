"""What the commands print: consoles for results (stdout) and notes/progress (stderr), the namespace
tree and the item table of ``inspect``."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import SearchItem
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.tree import Tree

__all__ = ["Ctx", "item_rows", "print_items", "print_tree", "short"]


@dataclass
class Ctx:
    """What every command gets: consoles for results (stdout) and messages/progress (stderr)."""

    out: Console
    err: Console
    quiet: bool = False

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar on stderr (nothing when quiet); yields ``advance(n)``."""
        if self.quiet:
            yield lambda n: None
            return
        columns = [
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        ]
        with Progress(*columns, console=self.err, transient=False) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)

    def result(self, as_json: bool, data: dict[str, Any], text: str) -> None:
        """A command's outcome on stdout: ``data`` as JSON (``--json``), else the line ``text``."""
        if as_json:
            self.out.print_json(data=data)
        else:
            self.out.print(text, highlight=False)

    def note(self, message: str) -> None:
        """A message on stderr, unless quiet."""
        if not self.quiet:
            self.err.print(message, highlight=False)


def short(value: Any, width: int = 80) -> str:
    """A value as JSON cut to ``width`` characters (``…`` marks the cut)."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat()


def print_tree(
    ctx: Ctx, store_name: str, counts: dict[tuple[str, ...], int], as_json: bool
) -> None:
    """The namespaces holding items, as a tree with item counts (or as JSON)."""
    total = sum(counts.values())
    if as_json:
        ctx.out.print_json(
            data={
                "store": store_name,
                "total": total,
                "namespaces": [
                    {"namespace": list(ns), "items": n} for ns, n in sorted(counts.items())
                ],
            }
        )
        return
    below: Counter[tuple[str, ...]] = Counter()
    for ns, n in counts.items():
        for depth in range(1, len(ns) + 1):
            below[ns[:depth]] += n
    ctx.out.print(f"[bold]{escape(store_name)}[/] — {total} item(s) in {len(counts)} namespace(s)")
    tree = Tree("", hide_root=True)
    nodes: dict[tuple[str, ...], Tree] = {(): tree}
    for prefix in sorted(below):
        own = counts.get(prefix, 0)
        label = f"{escape(prefix[-1])} [dim]({below[prefix]}"
        label += f", {own} here)[/]" if own and own != below[prefix] else ")[/]"
        nodes[prefix] = nodes[prefix[:-1]].add(label)
    ctx.out.print(tree)


def item_rows(hits: Sequence[SearchItem]) -> list[dict[str, Any]]:
    """Search results as the JSON rows of ``inspect --json``."""
    return [
        {
            "namespace": list(h.namespace),
            "key": h.key,
            "value": h.value,
            "created_at": _iso(h.created_at),
            "updated_at": _iso(h.updated_at),
            **({"score": h.score} if h.score is not None else {}),
        }
        for h in hits
    ]


def print_items(ctx: Ctx, title: str, hits: Sequence[SearchItem], *, scored: bool) -> None:
    """Search results as a table (with a score column when ``scored``)."""
    table = Table(title=title, title_justify="left")
    table.add_column("namespace", max_width=24, no_wrap=True, overflow="ellipsis")
    table.add_column("key", max_width=12, no_wrap=True, overflow="ellipsis")
    table.add_column("value", min_width=30, ratio=1, overflow="fold")
    table.add_column("updated (UTC)", no_wrap=True)
    if scored:
        table.add_column("score", no_wrap=True)
    for h in hits:
        cells = [
            ".".join(h.namespace),
            h.key,
            short(h.value, 160),
            h.updated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        ]
        if scored:
            cells.append("" if h.score is None else f"{h.score:.3f}")
        table.add_row(*(escape(c) for c in cells))
    ctx.out.print(table)
