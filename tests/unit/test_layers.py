"""The house rules of the code (DESIGN.md, Layout): folders are layers, every import
points down, no import cycle, no source file over 400 lines.

Read from the source with `ast` (every import statement, inside functions too), so a
lazy import cannot hide an arrow running back up.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests.support.source import parsed

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("stores", "prompts"),
    ("nodes.shared",),
    ("nodes.memory", "nodes.response"),
    ("graphs",),
    ("app",),
    ("bench",),
    ("cli", "bot"),
)
"""Bottom first. A room imports only its own modules and rooms on lower layers."""

MAX_LINES = 400


def room_of(module: str) -> str | None:
    rooms = [room for layer in LAYERS for room in layer]
    matches = [room for room in rooms if module == room or module.startswith(room + ".")]
    return max(matches, key=len, default=None)


RANK = {room: rank for rank, layer in enumerate(LAYERS) for room in layer}


def project_modules() -> dict[str, Path]:
    modules = {}
    for layer in LAYERS:
        for room in layer:
            folder = ROOT / room.replace(".", "/")
            for path in folder.rglob("*.py"):
                parts = path.relative_to(ROOT).with_suffix("").parts
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                modules[name] = path
    return modules


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports (the deepest known module of each name)."""
    found = set()
    for node in ast.walk(parsed(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


@cache  # the tree does not change during a run; read it once for every test here
def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: imports_of(path, known) - {name} for name, path in modules.items()}


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for source, targets in graph.items():
        here = room_of(source)
        for target in targets:
            there = room_of(target)
            if there == here:
                continue
            if RANK[there] >= RANK[here]:
                wrong.append(f"{source} ({here}) imports {target} ({there})")
    return sorted(wrong)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_belongs_to_a_layer():
    modules = project_modules()
    assert "core.settings" in modules and "bot.app" in modules
    assert all(room_of(name) is not None for name in modules)


def test_no_import_runs_back_up_or_across():
    assert upward_arrows(import_graph()) == []


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph()) == []


def test_the_foundation_imports_nothing_of_the_project():
    graph = import_graph()
    foreign = {
        f"{source} imports {target}"
        for source, targets in graph.items()
        if room_of(source) == "core"
        for target in targets
        if room_of(target) != "core"
    }
    assert foreign == set()


RANKING = "nodes.response.ranking"
RANKING_MAY_IMPORT = ("core.", "nodes.shared.clock", "stores.fulltext", RANKING)
"""The ranking package is pure: it reads no store and calls no model (`core.deps` holds
them); `stores.fulltext` lends it the word stems full-text search matches by."""
IMPURE_LIBRARIES = ("chromadb", "langchain", "langgraph", "psycopg", "sqlite3", "aiogram")


def libraries_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_the_ranking_reads_no_store_and_calls_no_model():
    modules = {name: path for name, path in project_modules().items() if name.startswith(RANKING)}
    assert len(modules) >= 5
    graph = import_graph()
    wrong = {
        f"{name} imports {target}"
        for name in modules
        for target in graph[name]
        if target == "core.deps" or not target.startswith(RANKING_MAY_IMPORT)
    }
    wrong |= {
        f"{name} imports {library}"
        for name, path in modules.items()
        for library in libraries_of(path) & set(IMPURE_LIBRARIES)
    }
    assert wrong == set()


def test_no_source_file_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in project_modules().values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_checks_catch_what_they_look_for():
    """The checks themselves: an upward arrow, a cycle and a sideways arrow are found."""
    graph = {
        "core.a": {"stores.b"},
        "stores.b": {"core.a"},
        "cli.x": {"bot.y"},
        "bot.y": set(),
        "nodes.memory.m": {"nodes.response.r"},
    }
    assert upward_arrows(graph) == [
        "cli.x (cli) imports bot.y (bot)",
        "core.a (core) imports stores.b (stores)",
        "nodes.memory.m (nodes.memory) imports nodes.response.r (nodes.response)",
    ]
    assert cycles(graph) == [["core.a", "stores.b"]]
    # Within one folder: two modules importing each other through a third is a cycle.
    folder = {
        "nodes.response.a": {"nodes.response.b"},
        "nodes.response.b": {"nodes.response.ranking.c"},
        "nodes.response.ranking.c": {"nodes.response.a"},
        "nodes.response.d": {"nodes.response.a"},
    }
    assert upward_arrows(folder) == []
    assert cycles(folder) == [["nodes.response.a", "nodes.response.b", "nodes.response.ranking.c"]]
