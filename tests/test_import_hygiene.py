"""The engine stays headless and the parent stays free of torch; the child entry needs only the stdlib."""

from __future__ import annotations

import json
import subprocess
import sys

PARENT_MODULES = [
    "rigcheck.engine.session",
    "rigcheck.engine.conditions",
    "rigcheck.engine.telemetry.sampler",
    "rigcheck.engine.runner",
    "rigcheck.engine.store",
    "rigcheck.engine.registry",
    "rigcheck.engine.export",
    "rigcheck.engine.childpath",
    "rigcheck.engine.owner",
    "rigcheck.engine.engine_main",
    "rigcheck.engine.detach",
    "rigcheck.engine.follow",
    "rigcheck.engine.control",
    "rigcheck.engine.rows",
    "rigcheck.engine.compare",
    "rigcheck.engine.junit",
]


def loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_engine_imports_neither_textual_nor_rich_nor_torch() -> None:
    modules = loaded_after("\n".join(f"import {m}" for m in PARENT_MODULES))
    assert not {"textual", "rich", "torch"} & modules


def test_the_cli_front_end_never_imports_torch() -> None:
    modules = loaded_after("from rigcheck.tui import cli, cli_display\ncli.build_parser().parse_args(['run', 'probe'])")
    assert not {"torch", "textual"} & modules


def test_the_app_process_never_imports_torch() -> None:
    modules = loaded_after("import rigcheck.tui.app, rigcheck.engine.session, rigcheck.engine.telemetry.sampler")
    assert "torch" not in modules and "textual" in modules


def test_child_side_modules_need_only_the_standard_library() -> None:
    modules = loaded_after(
        "import rigcheck.engine.child, rigcheck.engine.stages.probe, rigcheck.engine.facts.fingerprint"
    )
    third_party = {m.split(".")[0] for m in modules} & {"psutil", "rich", "textual", "numpy", "torch"}
    assert not third_party
