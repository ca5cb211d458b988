"""Exit codes and the parsers of option values (``--namespace``, ``--filter``, ``--embed``,
``--fields``, ``--model``), each reporting a bad value as a ``CLIError``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langmem_adapters.demo import SCRIPT, SCRIPTED_LABEL, ScriptedChatModel
from langmem_adapters.embeddings import HashEmbeddings
from langmem_adapters.errors import CLIError, first_line

__all__ = [
    "CONNECT_TIMEOUT",
    "FAILURE",
    "PAGE",
    "USAGE",
    "first_line",
    "parse_embed",
    "parse_fields",
    "parse_filter",
    "parse_model",
    "parse_namespace",
    "parse_namespace_path",
]

T = TypeVar("T")

#: Seconds to wait for a server before reporting it unreachable.
CONNECT_TIMEOUT = 5
#: Items per read page and per write batch.
PAGE = 500
#: Exit status of a usage mistake and of any other failure.
USAGE, FAILURE = 2, 1


def parse_namespace(text: str | None) -> tuple[str, ...]:
    """``--namespace``: labels joined by ``"."`` (``users.ada``) or a JSON list (``["users","ada"]``)."""
    if not text:
        return ()
    if text.startswith("["):
        try:
            labels = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CLIError(f"--namespace is not a JSON list: {exc.msg}", USAGE) from None
        if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
            raise CLIError("--namespace as JSON must be a list of non-empty strings", USAGE)
        return tuple(labels)
    labels = text.split(".")
    if not all(labels):
        raise CLIError(f"--namespace {text!r} has an empty label", USAGE)
    return tuple(labels)


def parse_namespace_path(text: str) -> tuple[str, ...]:
    """``mcp --namespace``: labels joined by ``"/"`` (``memories/{user}``) or ``"."``, or a JSON
    list."""
    if text.startswith("["):
        return parse_namespace(text)
    labels = tuple(text.split("/" if "/" in text else "."))
    if not all(labels):
        raise CLIError(f"--namespace {text!r} has an empty label", USAGE)
    return labels


def parse_filter(text: str | None) -> dict[str, Any] | None:
    """``--filter``: a JSON object of value conditions, as ``search`` takes them."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(
            f'--filter is not valid JSON: {exc.msg} (e.g. \'{{"kind": "fact"}}\')', USAGE
        ) from None
    if not isinstance(value, dict):
        raise CLIError('--filter must be a JSON object, e.g. \'{"kind": "fact"}\'', USAGE)
    return value


def parse_fields(text: str | None) -> list[str] | None:
    """``--fields``: comma-separated value paths to embed (``None``: the whole value)."""
    return [f.strip() for f in text.split(",") if f.strip()] if text else None


def parse_embed(
    spec: str | None, fields: Sequence[str] | None = None, *, option: str = "--embed"
) -> dict[str, Any] | None:
    """``--embed``: ``none``, ``hash`` / ``hash:DIMS`` (offline) or ``provider:model`` (LangChain).

    Returns an IndexConfig for the store, or ``None`` for no index. ``option`` is the name messages
    give the value (the server's ``LANGMEM_EMBED`` variable reuses this parser).
    """
    if spec is None or spec == "none":
        return None
    embeddings: Embeddings
    if spec == "hash" or spec.startswith("hash:"):
        dims_text = spec[5:] or "64"
        if not dims_text.isdigit() or int(dims_text) <= 0:
            raise CLIError(f"{option} hash:DIMS needs a positive integer, got {spec!r}", USAGE)
        embeddings = HashEmbeddings(int(dims_text))
        dims = int(dims_text)
    else:
        if ":" not in spec:
            raise CLIError(
                f"{option} must be none, hash[:DIMS] or provider:model, got {spec!r}", USAGE
            )
        embeddings, dims = _from_langchain(
            lambda: _init_embeddings(spec), f"{option} {spec}", "embeddings", spec
        )
    return {"dims": dims, "embed": embeddings, "fields": list(fields or ["$"])}


def _init_embeddings(spec: str) -> tuple[Embeddings, int]:
    """LangChain's embeddings for ``provider:model`` and their size (probed with one query)."""
    from langchain.embeddings import init_embeddings

    embeddings = init_embeddings(spec)
    return embeddings, len(embeddings.embed_query("dimension probe"))


def parse_model(spec: str | None) -> tuple[BaseChatModel, str]:
    """``--model``: the scripted model (offline) or a real one, with its label for the transcript."""
    if spec is None:
        return ScriptedChatModel(script=SCRIPT), SCRIPTED_LABEL
    if ":" not in spec:
        raise CLIError(
            f"--model must be provider:name (e.g. openai:gpt-4o-mini), got {spec!r}", USAGE
        )

    def init() -> BaseChatModel:
        from langchain.chat_models import init_chat_model

        return init_chat_model(spec)

    return _from_langchain(init, "--model", "model", spec), f"[model {spec}]"


def _from_langchain(make: Callable[[], T], option: str, what: str, spec: str) -> T:
    """Run a LangChain initialiser for an option, reporting a missing package or the provider's
    failure (a missing API key, an unknown model) as one ``CLIError``."""
    try:
        return make()
    except ImportError as exc:
        raise CLIError(
            f"{option} needs LangChain and the provider's package (pip install langchain "
            f"langchain-<provider>): {first_line(exc)}"
        ) from None
    except Exception as exc:  # provider packages raise their own types for missing keys etc.
        raise CLIError(f"cannot use {what} {spec!r}: {first_line(exc)}") from None
