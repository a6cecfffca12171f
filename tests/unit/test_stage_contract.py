"""The written stage contract holds for every registered stage: its target names a function that exists (read from
the source, never imported: the parent has no torch), its figure kinds are known, and the app has a key for it and
for more than nine stages, none taken by another key."""

from __future__ import annotations

import ast
import subprocess
import sys

from rigcheck.engine.facts.settings import GPU_ALLOC, GPU_BLAS, LINKS, figure_kinds
from rigcheck.engine.registry import FIGURE_KINDS, STAGES
from stage_infos import REPO

PACKAGE = "rigcheck."


def source_of(module: str) -> str:
    """The file that holds `module` ("rigcheck.engine.stages.matmul.stage"), read as text."""
    assert module.startswith(PACKAGE), module
    parts = module.removeprefix(PACKAGE).split(".")
    for path in (REPO.joinpath(*parts).with_suffix(".py"), REPO.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path.read_text()
    raise AssertionError(f"no file for {module}")


def test_every_registered_target_is_a_function_of_its_module() -> None:
    for info in STAGES.values():
        module, _, function = info.target.partition(":")
        tree = ast.parse(source_of(module))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert function in defined, f"{info.name}: {info.target} names no function of its module"


def test_the_contract_is_read_without_importing_torch() -> None:
    code = (
        "import sys; from rigcheck.engine.registry import STAGES; import rigcheck.engine.facts.settings; "
        "print('torch' in sys.modules, len(STAGES))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False" and int(out[1]) == len(STAGES)


def test_every_figure_kind_is_known_and_read_from_the_registration() -> None:
    for info in STAGES.values():
        assert set(info.figure_kinds) <= set(FIGURE_KINDS), info.name
    assert GPU_BLAS in figure_kinds("matmul", "cuda:0", {}) and GPU_ALLOC not in figure_kinds("matmul", "cuda:0", {})
    assert {GPU_BLAS, GPU_ALLOC} <= figure_kinds("training", "cuda:0", {})
    assert LINKS in figure_kinds("links", "cuda:0", {}) and GPU_BLAS not in figure_kinds("bandwidth", "cuda:0", {})
    assert figure_kinds("a stage nobody registered", "cuda:0", {}) == {"GPU figures"}


def test_the_app_has_a_key_for_more_than_nine_stages() -> None:
    from rigcheck.tui.app_keys import BINDINGS
    from rigcheck.tui.widgets.stage_keys import STAGE_KEYS, stage_key

    assert len(STAGE_KEYS) > 9 and len(set(STAGE_KEYS)) == len(STAGE_KEYS)
    assert [stage_key(i) for i in (0, 8, 9, 10)] == ["1", "9", "0", "e"] and stage_key(len(STAGE_KEYS)) == ""
    starts = {b.key: b.action for b in BINDINGS if b.action.startswith("start_stage")}
    assert all(starts[key] == f"start_stage({i})" for i, key in enumerate(STAGE_KEYS))
    others = {key for b in BINDINGS if not b.action.startswith(("start_stage", "why_not")) for key in b.key.split(",")}
    assert not others & set(STAGE_KEYS)
