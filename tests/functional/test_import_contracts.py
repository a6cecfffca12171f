"""The house's layers hold: `lint-imports` keeps pyproject.toml's contracts, and breaks on a forbidden import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib
from stage_infos import REPO

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint(root: Path, shim: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if shim is not None:
        env["PYTHONPATH"] = str(shim)
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_every_contract_is_kept() -> None:
    done = lint(REPO)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "broken" not in done.stdout.split("Contracts:")[-1].replace("0 broken", "")


def test_an_engine_module_that_imports_the_app_breaks_a_contract(tmp_path: Path) -> None:
    """The checker is live: a copy of the tree with one forbidden import fails, naming both contracts it breaks."""
    copy = tmp_path / "repo"
    for part in ("engine", "tui", "themes"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    with (copy / "engine" / "measure" / "__init__.py").open("a") as f:
        f.write("\nimport rigcheck.engine.run.runner  # a forbidden upward import\nimport rigcheck.tui.glyphs\n")
    shim = tmp_path / "shim"
    (shim / "rigcheck").mkdir(parents=True)
    for part in ("engine", "tui", "themes"):
        (shim / "rigcheck" / part).symlink_to(copy / part, target_is_directory=True)
    done = lint(copy, shim)
    assert done.returncode != 0, done.stdout[-4000:]
    assert "The engine never imports the front ends, textual or rich BROKEN" in done.stdout
    assert "The engine's layers: each imports only those below it BROKEN" in done.stdout
    assert "rigcheck.engine.measure -> rigcheck.engine.run.runner" in done.stdout


def test_the_readme_map_draws_the_layers_in_the_contracts_order() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in config if c["type"] == "layers"]
    names = [part.strip().removeprefix("rigcheck.engine.") for layer in layers for part in layer.split("|")]
    readme = (REPO / "README.md").read_text()
    drawing = readme[readme.index("## Layout") :].split("```")[1]
    positions = {}
    for name in names:
        shown = f"{name}/" if (REPO / "engine" / name).is_dir() else f"{name}.py"
        assert shown in drawing, f"README's layer map does not show engine/{shown}"
        positions[name] = drawing.index(shown)
    firsts = [min(positions[p.strip().removeprefix("rigcheck.engine.")] for p in layer.split("|")) for layer in layers]
    assert firsts == sorted(firsts), "README's layer map lists the layers in another order than the contract"
