"""The memory browser in a real browser: Debian's headless Chromium driven by Playwright, on the
embedded PostgreSQL and on Redis. Clicks through the tree, a search, a fact's history with the
as-of control and a confirmed delete; hostile stored text must not run.

Screenshots go to ``$LANGMEM_UI_SCREENSHOTS`` when set (``docs/img`` for the docs), else to a
temporary directory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
sync_api = pytest.importorskip("playwright.sync_api")

from tests.ui.conftest import SeededStore, serving  # noqa: E402
from tests.ui.seed import PAYLOADS, ROOT  # noqa: E402

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def shots(tmp_path: Path, backend: str) -> Path:
    """Where screenshots go: the docs' directory for the Postgres run when asked, else tmp."""
    target = os.environ.get("LANGMEM_UI_SCREENSHOTS")
    return Path(target) if target and backend == "postgres" else tmp_path


class Watch:
    """A page whose dialogs are recorded (any would mean stored text ran)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def ran(self) -> Any:
        return self.page.evaluate("() => window.__pwned")


def _open(browser: Any, **options: Any) -> Watch:
    context = browser.new_context(viewport={"width": 1100, "height": 700}, **options)
    return Watch(context.new_page())


def _expand(page: Any, label: str) -> None:
    """Open the tree node ``label`` (its count, not its link) and wait for its children."""
    summary = page.locator("summary", has=page.locator(f"a.ns-link:text-is('{label}')"))
    summary.locator(".count").click()
    summary.locator("xpath=..").locator(":scope > div.children > ul.tree").wait_for()


def test_tree_search_history_and_delete(browser: Any, seeded: SeededStore, shots: Path) -> None:
    expect = sync_api.expect
    with serving(seeded.store) as url:
        w = _open(browser)
        page = w.page
        page.goto(url)
        _expand(page, "acme")
        _expand(page, "user-42")
        expect(page.locator("a.ns-link:text-is('semantic')")).to_be_visible()
        page.screenshot(path=str(shots / "ui-tree.png"))

        page.locator("a.ns-link:text-is('semantic')").click()
        expect(page.locator("h1 .count")).to_have_text("3 item(s)")  # fetched after the page
        page.get_by_label("query").fill("green tea")
        page.get_by_role("button", name="search").click()
        expect(page.locator("th", has_text="score")).to_be_visible()
        expect(page.locator("table.items tbody tr").first).to_contain_text("green tea")
        page.screenshot(path=str(shots / "ui-search.png"))

        page.get_by_label("query").fill("")
        page.get_by_role("button", name="search").click()
        page.locator("tr", has_text="Lives in Berlin").locator("td.key a").click()
        expect(page.locator("table.lineage tbody tr")).to_have_count(2)
        page.locator("input[name=as_of]").fill("2025-03-01T00:00:00")
        page.get_by_role("button", name="show").click()
        expect(page.locator(".believed-text")).to_have_text("Lives in Paris")
        expect(page.locator("tr.believed")).to_contain_text("Lives in Paris")
        page.screenshot(path=str(shots / "ui-fact.png"), full_page=True)
        page.locator("input[name=as_of]").fill("2025-07-01T00:00:00")
        page.get_by_role("button", name="show").click()
        expect(page.locator(".believed-text")).to_have_text("Lives in Berlin")

        page.goto(f"{url}/ns?ns=acme&ns=sessions")
        page.get_by_role("link", name="session-0").click()
        expect(page.locator("dd.expiry")).to_contain_text("TTL 90 min")  # fetched after the page
        page.get_by_role("link", name="delete item…").click()
        expect(page.locator("strong.what")).to_have_text("session-0")
        page.screenshot(path=str(shots / "ui-confirm.png"))
        page.get_by_role("button", name="Delete item session-0").click()
        expect(page.locator(".flash")).to_contain_text("item session-0")
        assert seeded.store.get(("acme", "sessions"), "session-0") is None
        assert seeded.store.get(("acme", "sessions"), "session-1") is not None
        assert w.dialogs == [] and w.ran() is None


def test_tier_views_render(browser: Any, seeded: SeededStore, shots: Path) -> None:
    expect = sync_api.expect
    with serving(seeded.store) as url:
        page = _open(browser).page
        page.goto(f"{url}/ns?ns={ROOT[0]}&ns={ROOT[1]}&ns=episodic&view=timeline")
        expect(page.locator("ol.timeline li")).to_have_count(3)
        expect(page.locator("ol.timeline li").first).to_contain_text("delivery address")
        page.screenshot(path=str(shots / "ui-episodes.png"))
        page.goto(f"{url}/item?ns={ROOT[0]}&ns={ROOT[1]}&ns=procedural&key={seeded.ids.triage_v3}")
        expect(page.locator("article.version")).to_have_count(3)
        expect(page.locator("pre.diff .dadd").first).to_contain_text("Greet the user by name.")
        page.screenshot(path=str(shots / "ui-versions.png"), full_page=True)


def test_stored_payloads_never_run(browser: Any, seeded: SeededStore) -> None:
    """With the Content-Security-Policy bypassed, so escaping alone is what is tested."""
    expect = sync_api.expect
    with serving(seeded.store) as url:
        w = _open(browser, bypass_csp=True)
        page = w.page
        page.goto(url)
        _expand(page, "acme")
        hostile = page.locator("a.ns-link", has_text=PAYLOADS["label"])
        expect(hostile).to_be_visible()  # shown as text
        hostile.click()
        page.get_by_role("link", name=PAYLOADS["key"]).click()
        expect(page.locator("pre.json")).to_contain_text(PAYLOADS["text"])
        expect(page.locator("pre.json")).to_contain_text("onerror=")
        page.get_by_role("link", name="delete item…").click()
        expect(page.locator("strong.what")).to_have_text(PAYLOADS["key"])
        assert w.dialogs == []
        assert w.ran() is None
        assert page.locator("img, svg").count() == 0
