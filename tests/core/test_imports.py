"""No import circle in hirfuzz/: each module can be read, and changed, knowing only what it
imports. Every module is parsed (not imported: no TVM needed), imports inside functions
and under TYPE_CHECKING count too, and relative imports are resolved as Python does."""
import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "hirfuzz"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules `name` imports: `from . import x` counts x when it is a module,
    else the package; `from .a import b` counts a (and a.b, when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def one_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A path a -> b -> ... -> a inside `component`: what to show, to break it."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for successor in sorted(graph[node] & members):
            if successor == start:
                return paths[node] + [start]
            if successor not in paths:
                paths[successor] = paths[node] + [successor]
                frontier.append(successor)
    return component


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def test_the_graph_sees_the_imports_it_must():
    graph = import_graph()
    assert "hirfuzz.campaign.coordinator" in graph["hirfuzz.cli"]  # inside a function
    assert "hirfuzz.core.finding" in graph["hirfuzz.campaign.coordinator"]  # relative, two dots
    assert "hirfuzz.campaign" in graph["hirfuzz.campaign.settings"]  # from . import NAME


def test_no_module_of_hirfuzz_imports_itself_through_others():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import circles in hirfuzz/:\n" + "\n".join(
        " -> ".join(one_circle(graph, component)) + f"   (component: {', '.join(component)})"
        for component in found)


def test_a_circle_is_found_and_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert one_circle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
