"""Exit codes and the parsers of the CLI's own option values (``--namespace``, ``--filter``,
``--model``), each reporting a bad value as a ``CLIError``. Store URLs, ``--embed`` and
``--fields`` are settings the server reads too: :mod:`langmem_adapters.settings` parses them."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel

from langmem_adapters.compat import moved
from langmem_adapters.demo import SCRIPT, SCRIPTED_LABEL, ScriptedChatModel
from langmem_adapters.errors import CLIError
from langmem_adapters.settings import from_langchain

__all__ = [
    "FAILURE",
    "PAGE",
    "USAGE",
    "parse_filter",
    "parse_model",
    "parse_namespace",
    "parse_namespace_path",
]

__getattr__ = moved(
    __name__,
    {
        **dict.fromkeys(
            ["CONNECT_TIMEOUT", "parse_embed", "parse_fields"], "langmem_adapters.settings"
        ),
        "first_line": "langmem_adapters.errors",
    },
)

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

    return from_langchain(init, "--model", "model", spec), f"[model {spec}]"
