#!/usr/bin/env python3
"""Structure checks of the package (issue #28): import cycles, long functions, large modules, size.

Standard library only (``ast``, ``tokenize``); run as ``python .ci/structure.py [--report]``.

- **Import graph** of the whole package: the imports that run when a module is imported, that is
  the module's top level, including inside ``if``/``else``, ``try``, ``with``, loops and class
  bodies, but not inside functions and not in the body of ``if TYPE_CHECKING:`` (its ``else`` runs,
  so it counts). ``from . import x`` and ``from .mod import name`` are resolved against the module's
  package; an edge goes to the deepest module of the package the statement names (``from .a import
  b`` is an edge to ``a.b`` when that is a module, else to ``a``); parent packages that Python
  initialises on the way are not edges, nor is a module naming itself. Every strongly connected
  component (two or more modules) is a cycle: each is printed with one closed path through it.
- **Lengths**, in ``core/``, ``postgres/`` and ``redis/``, counted the way issue #28 counts them: a
  function's length is its physical lines from its ``def`` line to its last line (docstring,
  comments and blank lines included, decorators not; a nested function counts in its own right and
  inside its parent), a module's length its physical lines (``wc -l``). Over 60 lines for a
  function or 400 for a module fails.
- **Size** of the store layer (``core/``, ``postgres/``, ``redis/``): lines of Python that hold
  code, i.e. not blank, not only a comment, and not part of a docstring (a string literal that is
  the first statement of a module, class or function), plus the Lua scripts' lines that are neither
  blank nor comments (``--``). Issue #28's "6.9k ... plus 338 of Lua" was counted this way
  (commit a9b445f^: 6,929 and 338). Printed, never failing.

Exit status 1 on any cycle or length over its limit, unless ``--report`` is given.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

LAYER = ("core", "postgres", "redis")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


@dataclass(frozen=True)
class Module:
    """One module of the package: its dotted name, its file, and whether it is a package's __init__."""

    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Long:
    """A function or module over its limit: where it is and how many lines it has."""

    where: str
    lines: int


def find_modules(package: Path) -> dict[str, Module]:
    """Every ``.py`` file under ``package``, by dotted module name (the package's own name first)."""
    modules: dict[str, Module] = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = Module(".".join(parts), path, is_package)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` tests ``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def import_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run at import time (see the module docstring)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found.append(stmt)
        elif isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                found += import_time_imports(stmt.body)
            found += import_time_imports(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                found += import_time_imports(block)
            for handler in stmt.handlers:
                found += import_time_imports(handler.body)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.ClassDef)):
            found += import_time_imports(stmt.body)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            found += import_time_imports(stmt.body) + import_time_imports(stmt.orelse)
    return found


def _deepest(name: str, modules: dict[str, Module]) -> str | None:
    """The longest prefix of dotted ``name`` that is a module of the package, if any."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def imports_of(module: Module, modules: dict[str, Module], deferred: bool = False) -> set[str]:
    """The package's modules that ``module`` imports at import time (or anywhere, if ``deferred``)."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    targets: set[str] = set()
    statements = (
        [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        if deferred
        else import_time_imports(tree.body)
    )
    for stmt in statements:
        if isinstance(stmt, ast.Import):
            names = [alias.name for alias in stmt.names]
        else:
            base = stmt.module or ""
            if stmt.level:
                anchor = package.split(".")[: len(package.split(".")) - (stmt.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in stmt.names]
        for name in names:
            target = _deepest(name, modules)
            if target is not None:
                targets.add(target)
    targets.discard(module.name)  # a package's __init__ naming itself (``from . import name``)
    return targets


def import_graph(modules: dict[str, Module], deferred: bool = False) -> dict[str, set[str]]:
    """Each module's import-time imports within the package (all its imports, if ``deferred``)."""
    return {name: imports_of(module, modules, deferred) for name, module in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One closed path through each strongly connected component that has a cycle (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_closed_path(component, graph) for component in sorted(components)]


def _closed_path(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no cycle through {start}")  # a component with a cycle always has one


def layer_files(package: Path, suffix: str) -> list[Path]:
    """The files of the store layer (``core/``, ``postgres/``, ``redis/``) ending in ``suffix``."""
    return sorted(
        p for d in LAYER if (package / d).is_dir() for p in (package / d).rglob(f"*{suffix}")
    )


def long_functions(path: Path, label: str) -> list[Long]:
    """The functions and methods of one file over ``MAX_FUNCTION_LINES`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(Long(f"{label}:{node.lineno} {node.name}", lines))
    return found


def code_lines(source: str) -> int:
    """Lines of Python holding code: not blank, not only a comment, not within a docstring."""
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def lua_lines(source: str) -> int:
    """Lines of Lua that are neither blank nor ``--`` comments."""
    return sum(
        1 for line in source.splitlines() if line.strip() and not line.strip().startswith("--")
    )


def main(argv: list[str] | None = None) -> int:
    """Print the checks; return 1 on a cycle or a length over its limit unless ``--report``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="print everything, never fail")
    parser.add_argument(
        "--package",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "langmem_adapters",
        help="the package's directory (default: langmem_adapters beside .ci)",
    )
    args = parser.parse_args(argv)
    package: Path = args.package.resolve()
    modules = find_modules(package)
    graph = import_graph(modules)

    found_cycles = cycles(graph)
    edges = sum(len(targets) for targets in graph.values())
    print(f"== import graph: {len(modules)} modules, {edges} import-time edges")
    print(f"import cycles: {len(found_cycles)}")
    for path in found_cycles:
        print("  " + " -> ".join(path))
    hidden = [c for c in cycles(import_graph(modules, deferred=True)) if c not in found_cycles]
    print(f"(not failing) cycles only through TYPE_CHECKING or in-function imports: {len(hidden)}")
    for path in hidden:
        print("  " + " -> ".join(path))

    py_files = layer_files(package, ".py")
    functions = [
        long for p in py_files for long in long_functions(p, str(p.relative_to(package.parent)))
    ]
    big_modules = [
        Long(str(p.relative_to(package.parent)), n)
        for p in py_files
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    layer = "/, ".join(LAYER) + "/"
    print(f"== in {layer}: functions over {MAX_FUNCTION_LINES} lines: {len(functions)}")
    for long in sorted(functions, key=lambda f: -f.lines):
        print(f"  {long.lines:4d}  {long.where}")
    print(f"== in {layer}: modules over {MAX_MODULE_LINES} lines: {len(big_modules)}")
    for long in sorted(big_modules, key=lambda m: -m.lines):
        print(f"  {long.lines:4d}  {long.where}")

    python = sum(code_lines(p.read_text(encoding="utf-8")) for p in py_files)
    lua = sum(lua_lines(p.read_text(encoding="utf-8")) for p in layer_files(package, ".lua"))
    print(f"== store layer size ({layer}): {python} lines of Python code, {lua} of Lua")

    failed = bool(found_cycles or functions or big_modules)
    if failed and not args.report:
        print("structure: FAILED (cycles, long functions or large modules above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
