"""Issue 35.8: the fleet commands the README gives, run as written from a folder another user could write into.
The folder holds a planted `rigcheck/fleet/__main__.py` (and a `secrets.py`) that would run as the caller; the
raw torchrun command, the Slurm job script (under a stand-in srun that starts its one task as srun would)
and the key recipe each run there, and the planted code never runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fleet_driver import FLEET_KEY, free_port
from rigcheck.engine.fleet.seal import take_key
from rigcheck.engine.store import Store

pytestmark = pytest.mark.timeout(600)
README = Path(__file__).resolve().parents[2] / "README.md"
AGENT_ARGS = "probe --profile quick --device cpu --no-links"
SRUN = """#!/bin/bash
# srun for one node: drops its own options and starts the task with Slurm's variables, as srun would
while [[ $1 == --* ]]; do shift; done
export SLURM_PROCID=0 SLURM_NTASKS=1 SLURMD_NODENAME=node1 MASTER_ADDR=127.0.0.1
exec "$@"
"""
SCONTROL = "#!/bin/bash\necho node1\n"


def fleet_section() -> str:
    text = README.read_text()
    start = text.index("## Many hosts (a fleet run)")
    return text[start : text.index("\n## ", start + 1)]


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", fleet_section(), re.S)


def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with code that leaves a mark if anything imports it, and the mark's path."""
    folder, mark = tmp_path / "shared-folder", tmp_path / "HIJACKED"
    (folder / "rigcheck" / "fleet").mkdir(parents=True)
    plant = f"open({str(mark)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("rigcheck/__init__.py", "rigcheck/fleet/__init__.py", "rigcheck/fleet/__main__.py", "secrets.py"):
        (folder / name).write_text(plant)
    return folder, mark


def env_for(tmp_path: Path, store: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{bin_dir}:{os.environ.get('PATH', '')}"}
    env |= {"RIGCHECK_FLEET_KEY": FLEET_KEY, "RIGCHECK_STORE": str(store), "RIGCHECK_NODE_NAME": "node1"}
    for name in ("PYTHONSAFEPATH", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE"):
        env.pop(name, None)
    return env


def fleet_run_in(store: Path) -> dict:
    report = Store(store).report(1)
    assert report is not None and report["run"]["device"] == "fleet", report and report["run"]
    return report


def test_the_readmes_torchrun_command_imports_nothing_from_the_current_folder(tmp_path: Path) -> None:
    [block] = [b for b in sh_blocks() if "torchrun --nnodes" in b]
    command = " ".join(line.rstrip("\\").strip() for line in block.splitlines() if not line.startswith("export"))
    port = free_port()
    command = command.replace("--nnodes=4", "--nnodes=1").replace("node0:29400", f"127.0.0.1:{port}")
    command = command.replace("bringup-7", f"t{port}")
    command = re.sub(r"-m rigcheck\.fleet .*$", f"-m rigcheck.fleet {AGENT_ARGS}", command)
    assert "-m rigcheck.fleet probe" in command, command
    folder, mark = planted(tmp_path)
    store = tmp_path / "node1.db"
    done = subprocess.run(
        ["bash", "-c", command], cwd=folder, env=env_for(tmp_path, store), capture_output=True, text=True, timeout=500
    )
    assert not mark.exists(), f"the planted code ran: {mark.read_text()!r} ({command})"
    assert done.returncode == 0, done.stderr[-3000:]
    assert [s["status"] for s in fleet_run_in(store)["stages"]] == ["PASS"]


def test_the_slurm_job_script_imports_nothing_from_the_submit_folder(tmp_path: Path) -> None:
    [script] = [b for b in sh_blocks() if "#SBATCH" in b]
    (tmp_path / "bin").mkdir()
    for name, text in (("srun", SRUN), ("scontrol", SCONTROL)):
        (tmp_path / "bin" / name).write_text(text)
        (tmp_path / "bin" / name).chmod(0o755)
    (tmp_path / "rigcheck.sbatch").write_text(script)
    folder, mark = planted(tmp_path)
    env = env_for(tmp_path, tmp_path / "unused.db")
    env.pop("RIGCHECK_FLEET_KEY")  # the script makes one (with `secrets` from the submit folder, were it careless)
    env |= {"PYTHON": sys.executable, "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node1"}
    env |= {"SLURM_SUBMIT_DIR": str(folder), "MASTER_PORT": str(free_port())}
    done = subprocess.run(
        ["bash", str(tmp_path / "rigcheck.sbatch"), *shlex.split(AGENT_ARGS)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert not mark.exists(), f"the planted code ran: {mark.read_text()!r}"
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = fleet_run_in(folder / "rigcheck-4242" / "node1.db")
    assert [s["status"] for s in report["stages"]] == ["PASS"]
    assert (folder / "rigcheck-4242" / "node1.xml").exists()


def test_the_key_recipes_make_a_key_that_passes_and_import_nothing_from_the_folder(tmp_path: Path) -> None:
    recipes = re.findall(r"`(python3 [^`]*token_hex[^`]*)`", fleet_section())
    recipes += ["openssl rand -hex 32"] if "`openssl rand -hex 32`" in fleet_section() else []
    assert len(recipes) >= 2, recipes
    folder, mark = planted(tmp_path)
    for recipe in recipes:
        made = subprocess.run(["bash", "-c", recipe], cwd=folder, capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, (recipe, made.stderr)
        assert take_key({"RIGCHECK_FLEET_KEY": made.stdout.strip()}), recipe
    assert not mark.exists(), f"the planted code ran: {mark.read_text()!r}"


def test_an_agent_started_without_p_still_keeps_the_folder_out_of_what_it_imports_next(tmp_path: Path) -> None:
    """The old command (`python -m rigcheck.fleet`, no -P): a planted `rigcheck` would still run first, but the
    agent takes the folder out of its path before it imports anything else (`secrets` here, torch later)."""
    folder, mark = tmp_path / "shared-folder", tmp_path / "HIJACKED"
    folder.mkdir()
    (folder / "secrets.py").write_text(f"open({str(mark)!r}, 'a').write('secrets\\n')\n")
    env = env_for(tmp_path, tmp_path / "s.db")
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.fleet", "probe"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not mark.exists(), "the planted secrets.py was imported"
    assert done.returncode == 2 and "not started as a fleet agent" in done.stderr, done.stderr
