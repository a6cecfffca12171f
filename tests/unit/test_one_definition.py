"""One place for each shared rule: how a run ends, the exit-code table, the worst status."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import rigcheck.engine.exits as exits
from rigcheck.engine.events import Status, worst, worst_by
from rigcheck.engine.store import Store
from rigcheck.engine.store.run_end import RunEnd, run_end
from stage_infos import REPO

RUN_END_MODULE = REPO / "engine" / "store" / "run_end.py"
EXITS_MODULE = REPO / "engine" / "exits.py"
WORST_MODULE = REPO / "engine" / "events.py"
END_COLUMNS = re.compile(r"UPDATE\s+runs\s+SET\s+(.*?)(\bWHERE\b|$)", re.IGNORECASE | re.DOTALL)


def sources() -> list[tuple[Path, ast.Module]]:
    found = [*(REPO / "engine").rglob("*.py"), *(REPO / "tui").rglob("*.py")]
    assert len(found) > 50
    return [(path, ast.parse(path.read_text(), str(path))) for path in sorted(found)]


SOURCES = sources()


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"


def test_only_run_end_writes_a_runs_end_columns() -> None:
    writers = []
    for path, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = END_COLUMNS.search(node.value)
                if match and re.search(r"\b(finished|status|exit_code|error)\b", match.group(1)):
                    writers.append(where(path, node))
    assert writers and all(w.startswith("engine/store/run_end.py") for w in writers), writers


@pytest.mark.parametrize(
    ("asked", "end"),
    [
        (("complete", 1), RunEnd("complete", 1)),
        (("cancelled", 0), RunEnd("cancelled", 130)),
        (("cancelled", 3, True), RunEnd("interrupted", 130)),
        (("running", 0, True), RunEnd("interrupted", 130)),
        (("cancelled", 0, False, "disk full"), RunEnd("error", 4, "disk full")),
        (("cancelled", 0, True, "disk full"), RunEnd("error", 130, "disk full")),
    ],
)
def test_the_one_rule_for_how_a_run_ends(asked: tuple, end: RunEnd) -> None:  # type: ignore[type-arg]
    assert run_end(*asked) == end


def test_a_run_whose_engine_died_is_swept_as_interrupted_without_a_code(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    run_id = store.begin_run(["probe"], "cpu", "quick", "python3", [])
    store._write("UPDATE runs SET pid = 0 WHERE id = ?", (run_id,))  # an engine that no longer exists
    assert store.sweep_dead_runs() == [run_id]
    run = store.run(run_id)
    assert run is not None and (run["status"], run["exit_code"]) == ("interrupted", None) and run["finished"]


def int_constants(tree: ast.AST, value: int) -> list[ast.Constant]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value == value
    ]


def test_130_lives_only_in_the_exit_table() -> None:
    found = [where(path, node) for path, tree in SOURCES if path != EXITS_MODULE for node in int_constants(tree, 130)]
    assert found == []


def test_no_module_but_the_table_defines_an_exit_code() -> None:
    defined = []
    for path, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if any(name.startswith("EXIT_") for name in names) and path != EXITS_MODULE:
                    defined.append(where(path, node))
    assert defined == []


def test_the_readme_lists_exactly_the_tables_exit_codes() -> None:
    text = (REPO / "README.md").read_text()
    paragraph = " ".join(text[text.index("Exit codes:") :].split("\n\n")[0].split())
    listed = {int(code) for code in re.findall(r"(?:^|[:;]) (\d+) (?:when|on)\b", paragraph)}
    table = {value for name, value in vars(exits).items() if name.startswith("EXIT_")}
    assert listed == table


def test_worst_takes_the_first_of_equals_and_passes_over_unknown_words() -> None:
    rows = [{"status": "WARN", "n": 1}, {"status": "NEW-WORD", "n": 2}, {"status": "WARN", "n": 3}]
    assert worst_by(rows, lambda row: row["status"]) == {"status": "WARN", "n": 1}
    assert worst_by([{"status": "NEW-WORD"}], lambda row: row["status"]) is None
    assert worst(["PASS", Status.SKIP, "CRASH", "TIMEOUT"]) == Status.CRASH
    assert worst([Status.SKIP, Status.PASS]) == Status.PASS
    assert worst([]) is None


def is_severity(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "severity"


def is_threshold(node: ast.AST) -> bool:
    """`Status.PASS.severity`: a fixed bar, not a running worst."""
    return is_severity(node) and isinstance(node.value, ast.Attribute) and node.value.attr.isupper()  # type: ignore[attr-defined]


def test_the_worst_status_is_computed_in_one_place() -> None:
    others = []
    for path, tree in SOURCES:
        if path == WORST_MODULE:
            continue
        for node in ast.walk(tree):
            ranked = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("max", "min", "sorted")
                and any(kw.arg == "key" and "severity" in ast.unparse(kw.value) for kw in node.keywords)
            )
            running = (
                isinstance(node, ast.Compare)
                and all(is_severity(side) for side in (node.left, *node.comparators))
                and not any(is_threshold(side) for side in (node.left, *node.comparators))
            )
            if ranked or running:
                others.append(where(path, node))
    assert others == []
