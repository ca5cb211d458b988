"""The structure check of CI (.ci/structure.py): import cycles, long functions, large modules, size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "structure.py"


def _write(root: Path, files: dict[str, str]) -> Path:
    """A package tree ``pkg`` under ``root`` holding ``files`` (relative path -> text)."""
    package = root / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def _run(package: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--package", str(package), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _function(name: str, lines: int) -> str:
    """A function of exactly ``lines`` physical lines, with a docstring, a comment and a blank line."""
    body = ['    """Doc."""', "    # a comment", ""]
    body += [f"    x{i} = {i}" for i in range(lines - 1 - len(body) - 1)]
    return "\n".join([f"def {name}() -> None:", *body, "    return None", ""])


CLEAN = {
    "__init__.py": "from pkg.core import a\n",
    "core/__init__.py": "",
    "core/a.py": '"""Module a."""\nfrom . import b\n\n' + _function("sixty", 60),
    "core/b.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.core import a\n\n"
        "def later() -> None:\n    from pkg.core.a import sixty\n    sixty()\n"
    ),
    "redis/__init__.py": "",
    "redis/comments.py": "# a comment\n" * 400,  # 400 lines: not over; no code lines
    "redis/lua/one.lua": "-- a comment\n\nreturn 1\n",
    "postgres/__init__.py": "X = 1  # comment\nfrom . import X  # a name of its own: no cycle\n",
}


def test_clean_tree_passes_and_reports_its_size(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, CLEAN))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "import cycles: 0" in result.stdout
    # The TYPE_CHECKING and in-function imports make a cycle that is reported but does not fail.
    assert "in-function imports: 1" in result.stdout
    assert "functions over 60 lines: 0" in result.stdout
    assert "modules over 400 lines: 0" in result.stdout
    # Code lines: a.py 58 (its import, the def, 55 assignments, the return), b.py 6, postgres 2;
    # docstrings, comments, blank lines and pkg/__init__.py (outside the layer) do not count.
    # Lua: "return 1" only.
    assert "66 lines of Python code, 1 of Lua" in result.stdout


def test_cycle_and_long_function_and_large_module_fail(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["core/b.py"] = "from .a import sixty\n"  # a imports b at its top level: a cycle
    files["postgres/long.py"] = _function("too_long", 61)
    files["redis/big.py"] = "\n".join(f"X{i} = {i}" for i in range(401)) + "\n"
    package = _write(tmp_path, files)
    result = _run(package)
    assert result.returncode == 1
    assert "import cycles: 1" in result.stdout
    assert "pkg.core.a -> pkg.core.b -> pkg.core.a" in result.stdout
    assert "functions over 60 lines: 1" in result.stdout
    assert "61  pkg/postgres/long.py:1 too_long" in result.stdout
    assert "modules over 400 lines: 1" in result.stdout
    assert "401  pkg/redis/big.py" in result.stdout
    # --report prints the same and does not fail.
    report = _run(package, "--report")
    assert report.returncode == 0
    assert "FAILED" not in report.stdout
    assert result.stdout.startswith(report.stdout)


def test_relative_import_from_package_init_is_an_edge(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["core/__init__.py"] = "from .a import sixty\n"
    files["core/b.py"] = "from .. import core\n"  # b -> pkg.core (__init__) -> a -> b
    result = _run(_write(tmp_path, files))
    assert result.returncode == 1
    assert "pkg.core -> pkg.core.a -> pkg.core.b -> pkg.core" in result.stdout
