"""The memory browser over HTTP (Starlette's TestClient, no browser): pages, escaping, paging,
read-only mode, the access token, CSRF and Host checks."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from langmem_adapters.ui import create_app
from langmem_adapters.ui.server import access_for
from tests.ui.conftest import SeededStore
from tests.ui.seed import MOVED, PAYLOADS, ROOT, T0


def _client(seeded: SeededStore, **options: object) -> TestClient:
    return TestClient(create_app(seeded.store, name="test", **options), follow_redirects=False)  # type: ignore[arg-type]


def _ns(*labels: str) -> list[tuple[str, str]]:
    return [("ns", label) for label in labels]


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the confirmation form"
    return found.group(1)


def test_tree_lists_namespaces_with_counts(seeded: SeededStore) -> None:
    client = _client(seeded)
    root = client.get("/")
    assert root.status_code == 200
    assert "acme" in root.text and "15 live item(s)" in root.text
    below = client.get("/tree", params=_ns("acme", "user-42")).text
    for label, count in [("semantic", 3), ("episodic", 3), ("procedural", 4)]:
        assert re.search(rf">{label}</a> <span class=\"count\">{count}</span>", below), label


def test_count_is_its_own_request(seeded: SeededStore) -> None:
    client = _client(seeded)
    assert client.get("/count", params=_ns(*ROOT)).text == "10"
    assert client.get("/count", params=_ns("acme", "nothing")).text == "0"
    assert client.get("/count", params=[("ns", "")]).status_code == 400


def test_items_page_shows_keys_times_and_ttl(seeded: SeededStore) -> None:
    page = _client(seeded).get("/ns", params=_ns("acme", "sessions")).text
    assert page.count("session-") >= 3
    assert "90 min" in page  # the TTL column
    assert page.count("UTC") >= 9  # created, updated and expiry of each item
    expiry = _client(seeded).get("/expiry", params=[*_ns("acme", "sessions"), ("key", "session-0")])
    assert "UTC" in expiry.text and "(TTL 90 min)" in expiry.text
    never = _client(seeded).get("/expiry", params=[*_ns("acme", "user-7", "notes"), ("key", "n1")])
    assert never.text == "never"
    newest = _client(seeded).get("/ns", params=[*_ns("acme", "sessions"), ("view", "newest")]).text
    assert newest.count("session-") >= 3


def test_search_by_query_shows_scores_and_filter_narrows(seeded: SeededStore) -> None:
    client = _client(seeded)
    ranked = client.get("/ns", params=[*_ns(*ROOT, "semantic"), ("q", "green tea")]).text
    assert "<th>score</th>" in ranked
    rows = re.findall(r'<td class="value">(.*?)</td>', ranked)
    assert "green tea" in rows[0]
    filtered = client.get(
        "/ns", params=[*_ns(*ROOT, "semantic"), ("filter", '{"text": "Lives in Berlin"}')]
    ).text
    assert "Lives in Berlin" in filtered and "Lives in Paris" not in filtered
    bad = client.get("/ns", params=[*_ns(*ROOT), ("filter", "{oops")])
    assert bad.status_code == 400 and "not valid JSON" in bad.text


@pytest.mark.parametrize("backend", ["postgres", "redis-qe", "redis-plain"])
def test_a_query_without_an_index_lists_matches_unranked(make_store: Any) -> None:
    store = make_store()
    store.put(("a",), "k", {"text": "hello"})
    page = _client(SeededStore(store, None)).get("/ns", params=[*_ns("a"), ("q", "hello")])  # type: ignore[arg-type]
    assert page.status_code == 200
    assert "no index: unranked" in page.text and "<th>score</th>" not in page.text
    assert ">k</a>" in page.text


def test_paging_is_by_cursor_and_complete(seeded: SeededStore) -> None:
    ns = ("acme", "many")
    for i in range(250):
        seeded.store.put(ns, f"k{i:03d}", {"i": i})
    client = _client(seeded)
    seen: list[str] = []
    url = "/ns?ns=acme&ns=many"
    for _ in range(5):
        page = client.get(url).text
        keys = re.findall(r'<td class="key"><a [^>]*>(k\d+)</a>', page)
        assert len(keys) <= 100
        seen += keys
        nxt = re.search(r'<a class="next" href="([^"]+)"', page)
        if not nxt:
            break
        url = nxt.group(1).replace("&amp;", "&")
    assert seen == [f"k{i:03d}" for i in range(250)]


def test_fact_lineage_and_as_of(seeded: SeededStore) -> None:
    client = _client(seeded)
    params = [*_ns(*ROOT, "semantic"), ("key", seeded.ids.berlin)]
    page = client.get("/item", params=params).text
    assert "Lives in Paris" in page and "Lives in Berlin" in page
    assert "superseded" in page and "current" in page
    before = (MOVED - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M")
    then = client.get("/item", params=[*params, ("as_of", before)]).text
    assert re.search(r'believed <strong class="believed-text">Lives in Paris</strong>', then)
    after = client.get(
        "/item", params=[*params, ("as_of", (MOVED + timedelta(days=1)).isoformat())]
    ).text
    assert re.search(r'believed <strong class="believed-text">Lives in Berlin</strong>', after)
    early = client.get(
        "/item", params=[*params, ("as_of", (T0 - timedelta(days=1)).isoformat())]
    ).text
    assert "nothing recorded yet" in early


def test_instruction_versions_show_diffs(seeded: SeededStore) -> None:
    page = (
        _client(seeded)
        .get("/item", params=[*_ns(*ROOT, "procedural"), ("key", seeded.ids.triage_v3)])
        .text
    )
    assert "3 version(s)" in page
    assert '<span class="dadd">+Greet the user by name.</span>' in page
    assert '<span class="ddel">-Greet the user.</span>' in page


def test_episode_timeline_is_ordered_by_occurrence(seeded: SeededStore) -> None:
    page = _client(seeded).get("/ns", params=[*_ns(*ROOT, "episodic"), ("view", "timeline")]).text
    texts = re.findall(r"<time>[^<]*</time>\s*<a [^>]*>([^<]*)</a>", page)
    assert texts == [
        "Changed the delivery address to Berlin",
        "Reported the app crashing on login",
        "Asked for a refund of order 17",
    ]


def test_stored_text_is_escaped(seeded: SeededStore) -> None:
    client = _client(seeded)
    hostile = ("acme", PAYLOADS["label"])
    pages = [
        client.get("/").text,
        client.get("/tree", params=_ns("acme")).text,
        client.get("/ns", params=_ns(*hostile)).text,
        client.get("/item", params=[*_ns(*hostile), ("key", PAYLOADS["key"])]).text,
        client.get("/confirm", params=[*_ns(*hostile), ("key", PAYLOADS["key"])]).text,
    ]
    for html in pages:
        for payload in PAYLOADS.values():
            assert payload not in html
    assert "&lt;script&gt;window.__pwned=2&lt;/script&gt;" in pages[3]
    assert client.get("/").headers["content-security-policy"].startswith("default-src 'none'")


def test_read_only_removes_every_write(seeded: SeededStore) -> None:
    store = seeded.store
    before = sorted((i.namespace, i.key, i.updated_at) for i in store.iter_items())  # type: ignore[attr-defined]
    client = _client(seeded, read_only=True)
    for path in [
        "/",
        "/ns?ns=acme",
        f"/item?ns=acme&ns=user-42&ns=semantic&key={seeded.ids.paris}",
    ]:
        html = client.get(path).text
        assert "delete" not in html.lower()
    assert client.get("/confirm", params=_ns("acme")).status_code == 404
    for form in ({"ns": ["acme"]}, {"ns": ["acme", "sessions"], "key": "session-0"}):
        assert client.post("/delete", data=form).status_code in (404, 405)
    after = sorted((i.namespace, i.key, i.updated_at) for i in store.iter_items())  # type: ignore[attr-defined]
    assert after == before


def test_deletes_need_the_csrf_token_and_same_origin(seeded: SeededStore) -> None:
    client = _client(seeded)
    store = seeded.store
    confirm = client.get("/confirm", params=[*_ns("acme", "sessions"), ("key", "session-1")])
    assert "session-1" in confirm.text
    token = _csrf(confirm.text)
    form = {"ns": ["acme", "sessions"], "key": "session-1"}
    assert client.post("/delete", data=form).status_code == 403
    assert client.post("/delete", data={**form, "csrf": "forged"}).status_code == 403
    evil = client.post(
        "/delete", data={**form, "csrf": token}, headers={"origin": "http://evil.example"}
    )
    assert evil.status_code == 403
    assert store.get(("acme", "sessions"), "session-1") is not None
    done = client.post(
        "/delete", data={**form, "csrf": token}, headers={"origin": "http://testserver"}
    )
    assert done.status_code == 303
    assert store.get(("acme", "sessions"), "session-1") is None
    assert store.get(("acme", "sessions"), "session-0") is not None


def test_namespace_delete_names_what_goes(seeded: SeededStore) -> None:
    client = _client(seeded)
    confirm = client.get("/confirm", params=_ns(*ROOT)).text
    assert "10 item(s)" in confirm
    for label in ("semantic", "episodic", "procedural"):
        assert f"acme.user-42.{label}" in confirm
    done = client.post("/delete", data={"ns": list(ROOT), "csrf": _csrf(confirm)})
    assert done.status_code == 303
    assert seeded.store.count(ROOT) == 0  # type: ignore[attr-defined]
    assert seeded.store.count(("acme",)) == 5  # type: ignore[attr-defined]
    assert client.get("/confirm", params=[]).status_code == 400  # never the whole store


def test_token_is_required_when_configured(seeded: SeededStore) -> None:
    client = _client(seeded, token="s3cret")
    assert client.get("/").status_code == 401
    assert client.get("/ns", params=_ns("acme")).status_code == 401
    assert client.post("/delete", data={"ns": ["acme"]}).status_code == 401
    assert seeded.store.count(("acme",)) == 15  # type: ignore[attr-defined]
    assert client.get("/", params={"token": "wrong"}).status_code == 401
    entry = client.get("/", params={"token": "s3cret"})
    assert entry.status_code == 303 and entry.headers["location"] == "/"
    assert client.get("/").status_code == 200  # the cookie set by the entry URL


def test_access_rules_by_address() -> None:
    local = access_for("127.0.0.1", 8123)
    assert local.token is None and local.url == "http://127.0.0.1:8123/"
    assert local.allowed_hosts is not None and "localhost:8123" in local.allowed_hosts
    public = access_for("0.0.0.0", 8123)
    assert public.token and public.url.endswith(f"?token={public.token}")
    assert access_for("192.168.1.5", 1).token != public.token


def test_unknown_host_header_is_refused(seeded: SeededStore) -> None:
    client = _client(seeded, allowed_hosts=frozenset({"127.0.0.1:9"}))
    assert client.get("/").status_code == 400
    assert client.get("/", headers={"host": "127.0.0.1:9"}).status_code == 200
