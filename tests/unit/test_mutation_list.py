"""bench/mutation.py's lists stay true to the code: every module it mutates and every test it runs exists, and
every survivor it calls harmless is still a line of its module (a stale entry would excuse nothing, silently).
And it tells the truth: a mutant that does not compile, or whose tests never ran, is invalid, never killed."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def mutation_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_mutation", REPO / "bench" / "mutation.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_module_and_test_file_named_exists() -> None:
    mutation = mutation_module()
    for module, tests in mutation.MODULES.items():
        assert (REPO / module).is_file(), module
        files = [word for word in shlex.split(tests) if word.endswith(".py")]
        assert files and all((REPO / f).is_file() for f in files), module
    assert set(mutation.CI_MODULES) <= set(mutation.MODULES)
    # each named by its path: the physical limits of a device are stages/common/limits.py, not plausibility.py
    assert "engine/stages/common/limits.py" in mutation.CI_MODULES
    assert mutation.resolve(["stages/common/limits.py", "engine/trust/peers.py"]) == (
        ["engine/stages/common/limits.py", "engine/trust/peers.py"],
        [],
    )
    assert mutation.resolve(["limits", "verdicts.py", "nothing.py"])[1] == ["limits", "verdicts.py", "nothing.py"]


def test_every_harmless_survivor_is_a_line_of_its_module() -> None:
    mutation = mutation_module()
    for (module, operator, line), reason in mutation.HARMLESS.items():
        source = [text.strip() for text in (REPO / module).read_text().splitlines()]
        assert line in source, f"{module}: no line {line!r} any more; drop its entry"
        assert operator.startswith("core/") and reason
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-    if a != b:\n+    if a is not b:\n"
    from mutation_outcomes import original_line

    assert original_line(diff) == "if a != b:"
    # cosmic-ray's RemoveDecorator takes the blank line above the decorator with it: the decorator is the line
    removed = "--- a/x.py\n+++ b/x.py\n@@ -4,8 +4,6 @@\n     return 1\n-\n-    @staticmethod\n     def f(x):\n"
    assert original_line(removed) == "@staticmethod"


def test_mutants_in_type_annotations_are_told_from_those_in_code() -> None:
    mutation = mutation_module()
    source = "def f(a: int | None, b: int) -> str | None:\n    x: int | None = a | b\n    return str(x)\n"
    spans = mutation.annotation_spans(source)

    def inside(row: int, col: int) -> bool:
        return any(start <= (row, col) < end for start, end in spans)

    assert inside(1, source.index("|"))  # int | None of a
    assert inside(1, source.index("| None:"))  # the return annotation
    assert inside(2, 11) and not inside(2, 22)  # x's annotation is; a | b is code


SOURCE = "def f(p, c):\n    merged = {**p, **c}\n    return merged\n\n\nX = 1\n"
# what cosmic-ray 8.7 writes for its `**` of a dict display made an operator: a syntax error
SYNTAX_ERROR = (
    "--- mutation diff ---\n--- aa.py\n+++ ba.py\n@@ -1,3 +1,3 @@\n def f(p, c):\n"
    "-    merged = {**p, **c}\n+    merged = {*-p, **c}\n     return merged\n"
)
VALID = "--- aa.py\n+++ ba.py\n@@ -4,3 +4,3 @@\n \n \n-X = 1\n+X = 2\n"


def row(diff: str, test: str = "killed", output: str = "") -> dict:
    return {"line": 2, "operator": "core/X", "worker": "normal", "test": test, "diff": diff, "output": output}


def test_a_mutant_that_does_not_compile_or_whose_tests_never_ran_is_invalid_not_killed() -> None:
    mutation = mutation_module()
    assert mutation.NOT_RUN_MARK
    from mutation_outcomes import classify, mutated_source, score

    assert mutated_source(SOURCE, VALID) == SOURCE.replace("X = 1", "X = 2")
    assert mutated_source(SOURCE, SYNTAX_ERROR).splitlines()[1] == "    merged = {*-p, **c}"
    collection_error = "ERROR tests/x.py\n1 error in 0.1s\nrigcheck-mutation: pytest exit 2\n"
    found = classify(
        "a.py",
        SOURCE,
        [
            row(SYNTAX_ERROR),  # pytest's collection error was counted as a kill
            row(VALID, output=collection_error),  # compiles, but no test ran
            row(VALID, output="1 failed\n"),  # a real kill
            row(VALID, test="survived", output="3 passed\n"),
            row(SYNTAX_ERROR, test="survived"),  # tests that never import it: still not a survivor
            {**row(VALID, test="survived"), "worker": "timeout"},  # hung past the timeout: killed
        ],
    )
    assert [r["invalid"] for r in found["invalid"]] == [
        "the mutant does not compile: invalid syntax",
        "pytest exit 2 (collection error or no tests): no test judged it",
        "the mutant does not compile: invalid syntax",
    ]
    assert len(found["killed"]) == 2 and len(found["survived"]) == 1 and not found["incompetent"]
    assert score(len(found["killed"]), found["survived"]) == round(2 / 3, 3)
    assert score(2, [{"harmless": "an equivalent mutant"}]) == 1.0 and score(0, []) is None


def test_the_test_command_marks_a_collection_error_and_keeps_a_failure_a_failure(tmp_path: Path) -> None:
    mutation = mutation_module()
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    (tmp_path / "test_fails.py").write_text("def test_it():\n    assert False\n")
    (tmp_path / "test_passes.py").write_text("def test_it():\n    assert True\n")
    seen = {}
    for name in ("test_broken.py", "test_fails.py", "test_passes.py"):
        command = shlex.split(mutation.test_command(str(tmp_path / name)))  # as cosmic-ray splits it
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
        seen[name] = (done.returncode, mutation.NOT_RUN_MARK in done.stdout)
    assert seen == {"test_broken.py": (2, True), "test_fails.py": (1, False), "test_passes.py": (0, False)}
    assert command[:2] == ["sh", "-c"] and sys.executable in command[2]
