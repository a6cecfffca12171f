"""The README's Slurm job script, run as far as this machine allows: bash parses it, and `sbatch` and `srun` stand-ins
on PATH give its two tasks Slurm's variables (each its own SLURMD_NODENAME) and run them here; the real agents then
make one fleet run in the first node's store, which the job's last line names."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from consumers import junit_schema_problems
from fleet_driver import free_port
from rigcheck.engine.store import Store
from stage_infos import REPO

pytestmark = pytest.mark.timeout(420)
NODES = ("node1", "node2")
JOB = "4242"

# sbatch: runs the script at once in the submit folder, its output where #SBATCH --output says (%j: the job id)
SBATCH = """#!/usr/bin/env python3
import os, re, subprocess, sys
script = sys.argv[1]
output = re.search(r"^#SBATCH --output=(\\S+)", open(script).read(), re.M).group(1)
output = output.replace("%j", os.environ["SLURM_JOB_ID"])
with open(output, "w") as out:
    sys.exit(subprocess.run(["bash", script, *sys.argv[2:]], stdout=out, stderr=subprocess.STDOUT).returncode)
"""
# srun: one task per node of the job, all at once, each with its rank and its node's name; exits with the highest
SRUN = """#!/usr/bin/env python3
import os, subprocess, sys
argv = sys.argv[1:]
while argv and argv[0].startswith("--"):
    argv.pop(0)
nodes = os.environ["FAKE_SLURM_NODES"].split()
tasks = []
for rank, node in enumerate(nodes):
    env = dict(os.environ, SLURM_PROCID=str(rank), SLURM_NTASKS=str(len(nodes)), SLURMD_NODENAME=node,
               SLURM_STEP_NODELIST=os.environ["SLURM_JOB_NODELIST"])
    tasks.append(subprocess.Popen(argv, env=env))
sys.exit(max(task.wait() for task in tasks))
"""
SCONTROL = """#!/bin/sh
[ "$1 $2" = "show hostnames" ] || exit 1
for node in $FAKE_SLURM_NODES; do echo "$node"; done
"""


def readme_job_script() -> str:
    section = (REPO / "README.md").read_text().split("\n## Many hosts", 1)[1].split("\n## ", 1)[0]
    (script,) = [block for block in re.findall(r"```sh\n(.+?)\n```", section, re.S) if "#SBATCH" in block]
    return script + "\n"


def test_the_job_script_parses_and_asks_for_one_task_per_node(tmp_path: Path) -> None:
    script = readme_job_script()
    assert script.startswith("#!/bin/bash\n")
    path = tmp_path / "rigcheck.sbatch"
    path.write_text(script)
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    options = dict(re.findall(r"^#SBATCH --([\w-]+)=?(\S*)", script, re.M))
    assert options["ntasks-per-node"] == "1" and "%j" in options["output"]
    assert "SLURMD_NODENAME" in script and "RIGCHECK_STORE" in script and "RIGCHECK_NODE_NAME" in script


def test_the_job_script_makes_one_fleet_run_in_the_first_nodes_store(tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    for name, text in (("sbatch", SBATCH), ("srun", SRUN), ("scontrol", SCONTROL)):
        (shims / name).write_text(text.replace("#!/usr/bin/env python3", f"#!{sys.executable}"))
        (shims / name).chmod(0o755)
    (tmp_path / "rigcheck.sbatch").write_text(readme_job_script())
    env = dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ['PATH']}", PYTHON=sys.executable)
    env |= {"SLURM_JOB_ID": JOB, "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_SUBMIT_DIR": str(tmp_path)}
    # the nodes are all this machine: rank 0's store server on a free port of 127.0.0.1, not node1's 29517
    env |= {"FAKE_SLURM_NODES": " ".join(NODES), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RIGCHECK_STORE", "RIGCHECK_NODE_NAME", "RIGCHECK_DIR"):
        env.pop(key, None)
    argv = ["sbatch", "rigcheck.sbatch", "probe", "--profile", "quick", "--no-links"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=360)
    output = (tmp_path / f"rigcheck-{JOB}.out").read_text()
    assert done.returncode == 0, output + done.stderr
    folder = tmp_path / f"rigcheck-{JOB}"
    store_path = folder / "node1.db"
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"the fleet run is in {store_path}: rigcheck --store {store_path} history"), output
    (fleet_id,) = re.findall(rf"^fleet run (\d+) stored in {re.escape(str(store_path))}$", output, re.M)
    assert sorted(p.name for p in folder.glob("*.db")) == ["node1.db", "node2.db"]
    store = Store(store_path)
    (fleet,) = [run for run in store.runs() if run["device"] == "fleet"]
    assert str(fleet["id"]) == fleet_id
    report = store.report(fleet["id"])
    assert report is not None and report["fleet"]["id"] == JOB
    assert report["fleet"]["states"] == {"node1": "done", "node2": "done"}
    assert sorted((s["host"], s["name"], s["status"]) for s in report["stages"]) == [
        ("node1", "probe", "PASS"),
        ("node2", "probe", "PASS"),
    ]
    assert not [run for run in Store(folder / "node2.db").runs() if run["device"] == "fleet"]  # its own run only
    junit = (folder / "node1.xml").read_text()
    assert junit_schema_problems(junit) == [] and "[node1" in junit and "[node2" in junit
    history = last.split(": rigcheck ", 1)[1].split(" (JUnit")[0].split()
    for command, says in ((history, "fleet (2"), (["--store", str(store_path), "show", fleet_id], "node2")):
        shown = subprocess.run(
            [sys.executable, "-m", "rigcheck.tui.cli", *command], capture_output=True, text=True, env=env, timeout=120
        )
        assert shown.returncode == 0 and says in shown.stdout, shown.stdout + shown.stderr
