"""bench/mutation.py's lists stay true to the code: every module it mutates and every test it runs exists, and
every survivor it calls harmless is still a line of its module (a stale entry would excuse nothing, silently)."""

from __future__ import annotations

import importlib.util
import shlex
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
    for name, (module, tests) in mutation.MODULES.items():
        assert (REPO / module).is_file(), name
        files = [word for word in shlex.split(tests) if word.endswith(".py")]
        assert files and all((REPO / f).is_file() for f in files), name
    assert set(mutation.CI_MODULES) <= set(mutation.MODULES)


def test_every_harmless_survivor_is_a_line_of_its_module() -> None:
    mutation = mutation_module()
    for (module, operator, line), reason in mutation.HARMLESS.items():
        source = [text.strip() for text in (REPO / module).read_text().splitlines()]
        assert line in source, f"{module}: no line {line!r} any more; drop its entry"
        assert operator.startswith("core/") and reason
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-    if a != b:\n+    if a is not b:\n"
    assert mutation.original_line(diff) == "if a != b:"


def test_mutants_in_type_annotations_are_told_from_those_in_code() -> None:
    mutation = mutation_module()
    source = "def f(a: int | None, b: int) -> str | None:\n    x: int | None = a | b\n    return str(x)\n"
    spans = mutation.annotation_spans(source)

    def inside(row: int, col: int) -> bool:
        return any(start <= (row, col) < end for start, end in spans)

    assert inside(1, source.index("|"))  # int | None of a
    assert inside(1, source.index("| None:"))  # the return annotation
    assert inside(2, 11) and not inside(2, 22)  # x's annotation is; a | b is code
