"""Store locations and settings, parsed in one place for the CLI and the LangGraph server alike.

- :func:`parse_location`: a store URL (``postgresql://...`` with an optional ``?table_prefix=``,
  ``redis://`` / ``rediss://`` / ``redis+sentinel://...`` with an optional ``?prefix=``,
  ``embedded`` or ``embedded:PATH``, and the official stores' data as ``official+postgresql://``
  / ``official+redis://``) as a :class:`Location`; :func:`mask` hides a URL's password.
- :func:`parse_embed` / :func:`parse_fields`: an embedder (``none``, ``hash[:DIMS]``,
  ``provider:model``) and the value paths to embed, as a store's ``IndexConfig``.

A malformed value raises :class:`~langmem_adapters.errors.InvalidSettingError` (a ``ValueError``);
a well-formed one naming something unusable (an embedded server that does not start, a provider
that is not installed) raises :class:`~langmem_adapters.errors.SettingUnavailableError`. Each
message names the setting; the CLI prints it as is, the server prefixes its variable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from langchain_core.embeddings import Embeddings

from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import InvalidSettingError, SettingUnavailableError, first_line
from langmem_adapters.postgres.embedded import default_data_dir, embedded_dsn
from langmem_adapters.postgres.schema import Tables
from langmem_adapters.redis.urls import SENTINEL_SCHEME

__all__ = [
    "CONNECT_TIMEOUT",
    "Location",
    "from_langchain",
    "mask",
    "parse_embed",
    "parse_fields",
    "parse_location",
]

T = TypeVar("T")

#: Seconds to wait for a server before reporting it unreachable.
CONNECT_TIMEOUT = 5


@dataclass(frozen=True)
class Location:
    """A parsed store URL: what kind of store, how to connect, and a password-free name for messages."""

    kind: str  # "postgres" | "redis" | "official-postgres" | "official-redis"
    url: str  # connection string; "" for the embedded server (started on open)
    display: str
    data_dir: Path | None = None
    table_prefix: str = "langmem"

    @property
    def official(self) -> bool:
        """Whether this is the official LangGraph stores' data (readable only)."""
        return self.kind.startswith("official-")

    def dsn(self) -> str:
        """The PostgreSQL connection string, starting the embedded server if this is one."""
        if self.data_dir is None:
            return self.url
        try:
            return embedded_dsn(self.data_dir)
        except ImportError as exc:
            raise SettingUnavailableError(str(exc)) from None
        except Exception as exc:  # pgserver reports initdb/start failures with various types
            raise SettingUnavailableError(
                f"cannot start the embedded PostgreSQL in {self.data_dir}: {first_line(exc)}"
            ) from None


def mask(url: str) -> str:
    """The URL without its password, for messages and checkpoint files."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _without(parts: SplitResult, query: list[tuple[str, str]], option: str) -> str:
    """The URL of ``parts`` with ``option`` taken out of its query (our option, not the server's)."""
    return urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query if k != option])))


def parse_location(url: str) -> Location:
    """Parse a store URL (see the module docstring); ``InvalidSettingError`` for anything else."""
    if url == "embedded" or url.startswith("embedded:"):
        path = (
            Path(url[len("embedded:") :]).expanduser() if url != "embedded" else default_data_dir()
        )
        return Location("postgres", "", f"embedded:{path}", data_dir=path)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    official = scheme.startswith("official+")
    base = scheme.removeprefix("official+")
    parts = urlsplit(url[len("official+") :] if official else url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if base in ("postgresql", "postgres"):
        prefix = next((v for k, v in query if k == "table_prefix"), "langmem")
        if official and prefix != "langmem":
            raise InvalidSettingError(
                "table_prefix does not apply to official+postgresql:// (its table is 'store')"
            )
        try:
            Tables(prefix)
        except ValueError as exc:
            raise InvalidSettingError(str(exc)) from None
        kind = "official-postgres" if official else "postgres"
        return Location(
            kind, _without(parts, query, "table_prefix"), mask(url), table_prefix=prefix
        )
    if base in ("redis", "rediss", SENTINEL_SCHEME):
        prefix = next((v for k, v in query if k == "prefix"), "langmem")
        if official and prefix != "langmem":
            raise InvalidSettingError(
                "prefix does not apply to official+redis:// (its keys are store:<ULID>)"
            )
        kind = "official-redis" if official else "redis"
        return Location(kind, _without(parts, query, "prefix"), mask(url), table_prefix=prefix)
    raise InvalidSettingError(
        f"unsupported store URL {mask(url)!r}: use postgresql://..., redis://..., "
        f"{SENTINEL_SCHEME}://..., embedded[:PATH], "
        "or official+postgresql:// / official+redis:// as a migrate source"
    )


def parse_fields(text: str | None) -> list[str] | None:
    """Comma-separated value paths to embed (``None``: the whole value)."""
    return [f.strip() for f in text.split(",") if f.strip()] if text else None


def parse_embed(
    spec: str | None, fields: Sequence[str] | None = None, *, option: str = "--embed"
) -> dict[str, Any] | None:
    """An embedder: ``none``, ``hash`` / ``hash:DIMS`` (offline) or ``provider:model`` (LangChain).

    Returns an IndexConfig for the store, or ``None`` for no index. ``option`` is the name messages
    give the value (the CLI's ``--embed``, the server's ``LANGMEM_EMBED``).
    """
    if spec is None or spec == "none":
        return None
    embeddings: Embeddings
    if spec == "hash" or spec.startswith("hash:"):
        dims_text = spec[5:] or "64"
        if not dims_text.isdigit() or int(dims_text) <= 0:
            raise InvalidSettingError(f"{option} hash:DIMS needs a positive integer, got {spec!r}")
        embeddings = HashEmbeddings(int(dims_text))
        dims = int(dims_text)
    else:
        if ":" not in spec:
            raise InvalidSettingError(
                f"{option} must be none, hash[:DIMS] or provider:model, got {spec!r}"
            )
        embeddings, dims = from_langchain(
            lambda: _init_embeddings(spec), f"{option} {spec}", "embeddings", spec
        )
    return {"dims": dims, "embed": embeddings, "fields": list(fields or ["$"])}


def _init_embeddings(spec: str) -> tuple[Embeddings, int]:
    """LangChain's embeddings for ``provider:model`` and their size (probed with one query)."""
    from langchain.embeddings import init_embeddings

    embeddings = init_embeddings(spec)
    return embeddings, len(embeddings.embed_query("dimension probe"))


def from_langchain(make: Callable[[], T], option: str, what: str, spec: str) -> T:
    """Run a LangChain initialiser for a setting, reporting a missing package or the provider's
    failure (a missing API key, an unknown model) as one ``SettingUnavailableError``."""
    try:
        return make()
    except ImportError as exc:
        raise SettingUnavailableError(
            f"{option} needs LangChain and the provider's package (pip install langchain "
            f"langchain-<provider>): {first_line(exc)}"
        ) from None
    except Exception as exc:  # provider packages raise their own types for missing keys etc.
        raise SettingUnavailableError(f"cannot use {what} {spec!r}: {first_line(exc)}") from None
