"""Store locations and settings (``langmem_adapters.settings``), the one parser the CLI and the
LangGraph server share: what each URL and embedder spec becomes, and the package's errors for the
rest (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import (
    InvalidSettingError,
    LangmemAdaptersError,
    ServerConfigError,
    SettingUnavailableError,
)
from langmem_adapters.settings import mask, parse_embed, parse_fields, parse_location


@pytest.mark.parametrize(
    ("url", "kind", "target", "prefix"),
    [
        ("postgresql://u:pw@h:5432/db", "postgres", "postgresql://u:pw@h:5432/db", "langmem"),
        ("postgres://h/db?table_prefix=mem2", "postgres", "postgres://h/db", "mem2"),
        ("redis://h:6379/0?prefix=p1", "redis", "redis://h:6379/0", "p1"),
        ("rediss://h:6380", "redis", "rediss://h:6380", "langmem"),
        (
            "redis+sentinel://h:26379/mymaster",
            "redis",
            "redis+sentinel://h:26379/mymaster",
            "langmem",
        ),
        ("official+postgresql://h/db", "official-postgres", "postgresql://h/db", "langmem"),
        ("official+redis://h:6379", "official-redis", "redis://h:6379", "langmem"),
    ],
)
def test_store_urls_become_locations(url: str, kind: str, target: str, prefix: str) -> None:
    location = parse_location(url)
    assert (location.kind, location.url, location.table_prefix) == (kind, target, prefix)
    assert location.official == kind.startswith("official-")
    assert "pw" not in location.display
    assert location.dsn() == target  # no embedded server to start


def test_embedded_names_a_data_directory(tmp_path: Path) -> None:
    location = parse_location(f"embedded:{tmp_path}")
    assert (location.kind, location.url, location.data_dir) == ("postgres", "", tmp_path)
    assert parse_location("embedded").data_dir is not None


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://h/db", "unsupported store URL"),
        ("postgresql://h/db?table_prefix=bad-name!", "table_prefix"),
        ("official+postgresql://h/db?table_prefix=x", "does not apply"),
        ("official+redis://h?prefix=x", "does not apply"),
    ],
)
def test_a_malformed_url_is_an_invalid_setting(url: str, says: str) -> None:
    with pytest.raises(InvalidSettingError, match=says) as raised:
        parse_location(url)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, LangmemAdaptersError)


def test_mask_hides_only_the_password() -> None:
    assert mask("postgresql://ada:secret@h/db") == "postgresql://ada:***@h/db"
    assert mask("redis://h:6379") == "redis://h:6379"


def test_embedders_become_an_index_config() -> None:
    assert parse_embed(None) is None
    assert parse_embed("none") is None
    index = parse_embed("hash:32", parse_fields(" text , tags "))
    assert index is not None
    assert (index["dims"], index["fields"]) == (32, ["text", "tags"])
    assert isinstance(index["embed"], HashEmbeddings)
    default = parse_embed("hash")
    assert default is not None and (default["dims"], default["fields"]) == (64, ["$"])
    assert parse_fields("") is None


@pytest.mark.parametrize("spec", ["hash:0", "hash:x", "openai"])
def test_a_malformed_embedder_is_an_invalid_setting_named_as_given(spec: str) -> None:
    with pytest.raises(InvalidSettingError, match="LANGMEM_EMBED"):
        parse_embed(spec, option="LANGMEM_EMBED")


def test_an_unusable_provider_is_a_setting_unavailable() -> None:
    with pytest.raises(SettingUnavailableError, match="no-such-provider") as raised:
        parse_embed("no-such-provider:model")
    assert isinstance(raised.value, LangmemAdaptersError)
    assert not isinstance(raised.value, ValueError)  # the CLI exits 1, not 2 (usage)


def test_the_servers_error_is_a_setting_error() -> None:
    assert issubclass(ServerConfigError, InvalidSettingError)
