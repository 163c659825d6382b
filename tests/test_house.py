"""The house rules of docs/layout.md, read from the source: imports point down the rooms, never up, and no module
imports itself back through another (no import circle, ``TYPE_CHECKING`` imports included)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sb3_dirpg"

# a module may import from its own room and from rooms of a lower floor, never from a room on its floor or above
FLOORS = {
    "quickstart": 6,  # the quickstart: a script on top of everything
    "integrations": 5,
    "": 4,  # the package's own __init__
    "dirpg": 3,
    "baselines": 3,
    "envs": 2,
    "common": 1,
    "search": 0,
    "simulator": 0,
    "numba_cache": 0,  # a module of its own: imports nothing of the package; the package's __init__ runs it first
}
SEARCH_MUST_NOT_IMPORT = ("stable_baselines3", "sb3_contrib", "torch")


def _module_name(path: Path) -> str:
    """:param path: a source file of the package
    :return: its dotted module name (a package's ``__init__`` is the package)"""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, ast.Module]:
    """:return: every module of the package, parsed"""
    return {_module_name(path): ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}


def _imports(tree: ast.Module, known: set[str]) -> set[str]:
    """:param tree: a parsed module
    :param known: the package's module names
    :return: every module it imports, at any depth of the file (function bodies and ``TYPE_CHECKING`` blocks too)"""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return found


def _room(module: str) -> str:
    """:param module: a dotted module name of the package
    :return: its room: the first folder under ``sb3_dirpg``, or "" for the package itself"""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    modules = _modules()
    known = set(modules)
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for name, tree in modules.items():
        for target in _imports(tree, known):
            g.add_edge(name, target)
    return g


def test_every_room_has_a_floor(graph):
    rooms = {_room(m) for m in graph if m.startswith("sb3_dirpg")}
    assert rooms <= set(FLOORS) | {"zoo_hyperparams"}, f"rooms without a floor in this test: {rooms - set(FLOORS)}"


def _upward(graph: nx.DiGraph) -> list[str]:
    """:param graph: module import graph
    :return: the imports of a package module that point to a room on its own floor or above"""
    upward = []
    for source, target in graph.edges:
        if not (source.startswith("sb3_dirpg") and target.startswith("sb3_dirpg")):
            continue
        here, there = _room(source), _room(target)
        if here != there and FLOORS[there] >= FLOORS[here]:
            upward.append(f"{source} -> {target}")
    return sorted(upward)


def _circles(graph: nx.DiGraph) -> list[list[str]]:
    """:param graph: module import graph
    :return: the import circles among the package's modules"""
    package_graph = graph.subgraph(m for m in graph if m.startswith("sb3_dirpg"))
    return sorted(sorted(c) for c in nx.simple_cycles(package_graph))


def test_no_import_runs_up(graph):
    upward = _upward(graph)
    assert not upward, "imports that run up or sideways in the house:\n" + "\n".join(upward)


def test_no_import_circle(graph):
    assert not _circles(graph), f"import circles: {_circles(graph)}"


def test_search_knows_nothing_of_sb3_or_torch(graph):
    offending = [
        f"{source} -> {target}"
        for source, target in graph.edges
        if _room(source) == "search" and target.split(".")[0] in SEARCH_MUST_NOT_IMPORT
    ]
    assert not offending, offending


def test_the_checks_catch_an_upward_arrow_and_a_circle():
    known = {"sb3_dirpg.common.pool", "sb3_dirpg.dirpg.update", "sb3_dirpg.search.a", "sb3_dirpg.search.b"}
    g = nx.DiGraph()
    g.add_edges_from((source, target) for source, code in [
        ("sb3_dirpg.common.pool", "from sb3_dirpg.dirpg.update import steps"),
        ("sb3_dirpg.search.a", "from sb3_dirpg.search import b"),
        ("sb3_dirpg.search.b", "import sb3_dirpg.search.a"),
    ] for target in _imports(ast.parse(code), known))  # fmt: skip
    assert _upward(g) == ["sb3_dirpg.common.pool -> sb3_dirpg.dirpg.update"]
    assert _circles(g) == [["sb3_dirpg.search.a", "sb3_dirpg.search.b"]]


def _layout_rows() -> dict[str, str]:
    """:return: the rows of docs/layout.md's module table: each path of the first column (relative to ``sb3_dirpg``) and
    its row's text"""
    text = (PACKAGE.parent / "docs" / "layout.md").read_text().split("## Modules", 1)[1]
    rows = {}
    for line in text.splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) > 1:
            for path in re.findall(r"`([^`]+)`", cells[0]):
                rows[path] = line
    return rows


def test_the_layout_page_names_every_module_of_the_package_and_no_module_that_is_gone() -> None:
    """Every module has a row of its own in docs/layout.md, or is named in the row of its folder; every row names a
    file or folder that exists."""
    rows = _layout_rows()
    assert not [path for path in rows if not (PACKAGE / path).exists()], "rows for modules that are gone"
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__init__.py", "__main__.py") or relative in rows:
            continue
        folders = [folder for folder in rows if folder.endswith("/") and relative.startswith(folder)]
        if not any(f"`{relative.removeprefix(folder)}`" in rows[folder] for folder in folders):
            unnamed.append(relative)
    assert not unnamed, f"modules docs/layout.md does not name: {unnamed}"
