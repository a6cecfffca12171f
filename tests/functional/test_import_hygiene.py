"""The engine stays headless and the parent stays free of torch; the child entry needs only the stdlib."""

from __future__ import annotations

import json
import subprocess
import sys

PARENT_MODULES = [
    "rigcheck.engine.run.session",
    "rigcheck.engine.trust.conditions",
    "rigcheck.engine.telemetry.sampler",
    "rigcheck.engine.run.runner",
    "rigcheck.engine.store",
    "rigcheck.engine.registry",
    "rigcheck.engine.report.export",
    "rigcheck.engine.run.childpath",
    "rigcheck.engine.run.owner",
    "rigcheck.engine.run.engine_main",
    "rigcheck.engine.run.detach",
    "rigcheck.engine.run.follow",
    "rigcheck.engine.run.control",
    "rigcheck.engine.run.stream",
    "rigcheck.engine.run.wire",
    "rigcheck.engine.run.cancel",
    "rigcheck.engine.report.rows",
    "rigcheck.engine.report.compare",
    "rigcheck.engine.report.junit",
    "rigcheck.engine.report.fleet_summary",
    "rigcheck.engine.run.preflight",
    "rigcheck.engine.run.options",
    "rigcheck.engine.fleet.main",
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
    modules = loaded_after("import rigcheck.tui.app, rigcheck.engine.run.session, rigcheck.engine.telemetry.sampler")
    assert "torch" not in modules and "textual" in modules


def test_child_side_modules_need_only_the_standard_library() -> None:
    modules = loaded_after(
        "import rigcheck.engine.run.child, rigcheck.engine.stages.probe, rigcheck.engine.facts.fingerprint"
    )
    third_party = {m.split(".")[0] for m in modules} & {"psutil", "rich", "textual", "numpy", "torch"}
    assert not third_party


def test_a_real_run_leaves_the_parent_without_torch(tmp_path: object) -> None:
    """Probe's events carry torch's own version type (a str subclass): unpickled as sent, it imported torch into
    the parent, 3.6 s into every run's first stage. A real run, then the parent's modules."""
    code = (
        "import os, sys\n"
        f"os.environ['RIGCHECK_STORE'] = {str(tmp_path) + '/store.db'!r}\n"
        "from rigcheck.tui import cli\n"
        "try:\n    cli.main(['run', 'probe', '--device', 'cpu'])\nexcept SystemExit as end:\n"
        "    assert end.code in (0, None), end.code\n"
    )
    modules = loaded_after(code)
    assert "rigcheck.engine.run.runner" in modules  # it did run stages here
    assert "torch" not in modules
