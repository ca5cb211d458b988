"""Every notebook in ``notebooks/`` runs top to bottom, offline, on an embedded PostgreSQL.

Executed with nbclient on the ``python3`` kernel of the running interpreter (ipykernel in the same
environment); the committed notebooks carry no outputs, so nothing stale can be checked in.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert [p.name[:2] for p in NOTEBOOKS][:4] == ["01", "02", "03", "04"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), (
        f"{path.name} was committed with outputs; clear them"
    )
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(path.parents[1]), os.environ.get("PYTHONPATH", "")])
    )
    client = NotebookClient(
        book,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
        extra_arguments=[],
    )
    client.kernel_manager_class = _manager_for(sys.executable)
    client.execute()


def _manager_for(python: str) -> type:
    """A kernel manager that starts ipykernel with this interpreter (not whatever 'python3' is on PATH)."""
    from jupyter_client.manager import KernelManager

    class ThisPythonKernel(KernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return [
                python,
                "-m",
                "ipykernel_launcher",
                "-f",
                self.connection_file,
                *(extra_arguments or []),
            ]

    return ThisPythonKernel
