"""The command-line tests' shared fixture: ``run``, one in-process command."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langmem_adapters.cli import main

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``run(*argv)`` -> (exit code, stdout, stderr) of one in-process command."""

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke
