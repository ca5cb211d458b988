"""The demo's background-extraction step: one extraction of the final thread, its facts stored."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore
from rich.console import Console

from langmem_adapters.demo import (
    BACKGROUND_FACTS,
    ROOT,
    SCRIPT,
    USER,
    ScriptedChatModel,
    run_background_step,
)
from langmem_adapters.memory import SemanticMemory


def test_background_step_extracts_once_from_the_final_state() -> None:
    store = InMemoryStore()
    out = Console(record=True, width=200)
    run_background_step(store, ScriptedChatModel(script=SCRIPT), out)
    text = out.export_text()
    assert "ran 1 extraction (1 model call) on the final state" in text
    facts = SemanticMemory(store, namespace=(*ROOT, USER)).recall(None)
    assert sorted(f.text for f in facts) == sorted(BACKGROUND_FACTS.values())
