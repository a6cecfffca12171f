"""No import circle in engine/ or tui/, counting imports made inside functions: a circle hidden in a function
still ties two modules into one, and only waits for the call that trips it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# where each top-level package of the wheel lives in this checkout (pyproject's package-dir)
PACKAGES = {
    "rigcheck.engine": ROOT / "engine",
    "rigcheck.tui": ROOT / "tui",
    "rigcheck.fleet": ROOT / "engine" / "fleet" / "entry",
}


def module_files() -> dict[str, Path]:
    """Every module under the packages above, by its dotted name."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` at the top: it runs only where the module is the program, a module object apart
    from the one its dotted name imports, so what it imports ties no circle (tui/cli.py hands itself to tui/entry)."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def imported_names(path: Path, name: str) -> set[str]:
    """The dotted names a module imports anywhere in its text, with `from pkg import x` as pkg and pkg.x."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    tree.body = [node for node in tree.body if not is_main_guard(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {
        name: {n for n in imported_names(path, name) if n in modules and n != name} for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_and_from_imports() -> None:
    graph = import_graph()
    assert "rigcheck.engine.stage" in graph["rigcheck.tui.cli"]  # imported inside build_parser
    assert "rigcheck.tui.cli_run" in graph["rigcheck.tui.cli"]
    assert "rigcheck.engine.fleet.main" in graph["rigcheck.fleet.__main__"]


def test_a_main_guard_is_left_out_and_nothing_else(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import a\nif __name__ == '__main__':\n    import b\nif __name__ == 'x':\n    import c\n"
        "def f():\n    if __name__ == '__main__':\n        import d\n"
    )
    assert imported_names(module, "pkg.m") == {"a", "c", "d"}  # only a top-level guard is the program's own


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_engine_and_tui_import_without_a_circle() -> None:
    assert circles(import_graph()) == []
