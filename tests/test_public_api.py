"""The package uses only public names of its dependencies (langgraph, langchain, redis-py, psycopg,
CPython...): a minor release may rename or remove a private one and break every user at once.

Read from the source with ``ast``: an import of a private name or module from another package, or
an attribute starting with one underscore that this package defines nowhere (``conn._sock``,
``threading._register_atexit``), fails. namedtuple's documented ``_replace``/``_asdict``/``_fields``
/``_make`` are public API.

And each package exports its own API and nothing else: a class or function in a subpackage's
``__all__`` is defined in that subpackage; only ``langmem_adapters`` itself re-exports (documented
in its docstring).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import langmem_adapters

PACKAGE = Path(__file__).resolve().parent.parent / "langmem_adapters"
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in PACKAGE.rglob("*.py")}


def _own_names(trees: dict[Path, ast.Module]) -> set[str]:
    """Every name this package defines: functions, classes, attributes assigned, arguments."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)  # pydantic PrivateAttr and dataclass fields given by keyword
    return names


def private_uses(trees: dict[Path, ast.Module]) -> list[str]:
    """``path:line: what`` for every private name of another package the code uses."""
    own = _own_names(trees)
    found: list[str] = []
    for path, tree in trees.items():
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] == "langmem_adapters":
                    continue
                if any(_private(part) for part in node.module.split(".")):
                    found.append(f"{where}:{node.lineno}: private module {node.module}")
                found += [
                    f"{where}:{node.lineno}: {node.module}.{a.name}"
                    for a in node.names
                    if _private(a.name)
                ]
            elif isinstance(node, ast.Import):
                found += [
                    f"{where}:{node.lineno}: private module {a.name}"
                    for a in node.names
                    if any(_private(part) for part in a.name.split("."))
                ]
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                if node.attr not in own and node.attr not in NAMEDTUPLE_API:
                    found.append(f"{where}:{node.lineno}: .{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
                and node.args[1].value not in own
            ):  # getattr(module, "_name", ...) reaches a private name too
                found.append(f"{where}:{node.lineno}: getattr(..., {node.args[1].value!r})")
    return sorted(found)


def test_the_package_uses_no_private_name_of_a_dependency() -> None:
    assert private_uses(_trees()) == []


def test_the_check_finds_private_names() -> None:
    """The check itself catches each kind of use it looks for (so it cannot pass by reading nothing)."""
    source = (
        "import threading\n"
        "from langgraph.store.base import _ensure_ttl\n"
        "from redis._parsers import Encoder\n"
        "def f(conn):\n"
        "    threading._register_atexit(f)\n"
        "    getattr(threading, '_shutdown_locks', None)\n"
        "    return conn._sock, conn._replace(a=1)\n"
    )
    trees = {PACKAGE / "example.py": ast.parse(source)}
    assert [u.split(": ", 1)[1] for u in private_uses(trees)] == [
        "langgraph.store.base._ensure_ttl",
        "private module redis._parsers",
        "._register_atexit",
        "getattr(..., '_shutdown_locks')",
        "._sock",
    ]


SUBPACKAGES = sorted(
    info.name
    for info in pkgutil.iter_modules(langmem_adapters.__path__, "langmem_adapters.")
    if info.ispkg
)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_exports_only_what_it_defines(package: str) -> None:
    try:
        module = importlib.import_module(package)
    except ImportError:  # an optional extra that is not installed
        return
    foreign = {
        name: obj.__module__
        for name in getattr(module, "__all__", ())
        if (inspect.isclass(obj := getattr(module, name)) or inspect.isfunction(obj))
        and obj.__module__.startswith("langmem_adapters")  # not a type alias (3.10: a "class")
        and not obj.__module__.startswith(package + ".")
        and obj.__module__ != package
    }
    assert foreign == {}, f"{package} re-exports {foreign}"


def test_the_demo_and_scripted_models_are_out_of_the_manager() -> None:
    import langmem_adapters.manager as manager

    assert not {"ScriptedMemoryModel", "jaccard", "normalise", "read_data", "build_prompt"} & set(
        manager.__all__
    )
    with pytest.warns(DeprecationWarning, match="langmem_adapters.demo"):
        from langmem_adapters.manager import ScriptedMemoryModel
    from langmem_adapters.demo import ScriptedMemoryModel as canonical

    assert ScriptedMemoryModel is canonical
