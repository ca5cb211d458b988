"""The README's and docs' links between our Markdown files reach a file that exists and, where they
name a section, a heading (or an ``<a id>``) of it, with GitHub's rule for a heading's anchor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]*?\.md)?(?:#([^)\s]+))?\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors a page offers: its headings' and its ``<a id="...">`` tags'."""
    text = page.read_text()
    return {anchor(h) for h in re.findall(r"^#+ (.*)$", text, re.M)} | set(
        re.findall(r'<a id="([^"]+)"', text)
    )


def test_anchor_follows_githubs_rule() -> None:
    assert anchor("MCP over stdio (#29)") == "mcp-over-stdio-29"
    assert anchor("Where a search's time goes (2026-12-05, night)") == (
        "where-a-searchs-time-goes-2026-12-05-night"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_between_our_pages_reach_their_sections(page: Path) -> None:
    broken = []
    for target, section in LINK.findall(page.read_text()):
        if target.startswith(("http:", "https:")) or not (target or section):
            continue
        linked = (page.parent / target).resolve() if target else page
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif section and linked.suffix == ".md" and section not in anchors(linked):
            broken.append(f"{target}#{section}")
    assert not broken, broken
