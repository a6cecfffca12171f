"""Issue 44: a broken `references.json` in the installed package broke every command: a truncated table gave a
traceback and a FIFO hung them all. Now each command that needs the table says so in one line, exit 4, at once,
and the health gate (which never loads it) still answers. The table is moved by a prelude that sets the module's
`__file__`, so the installed package is never touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rigcheck.engine.measure.references import TABLE

MOVED = (
    "import sys, importlib.abc, importlib.util\n"
    "NAME = 'rigcheck.engine.measure.references'\n"
    "class Moved(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name != NAME:\n"
    "            return None\n"
    "        sys.meta_path.remove(self)\n"
    "        spec = importlib.util.find_spec(name)\n"
    "        real = spec.loader\n"
    "        class Loader(importlib.abc.Loader):\n"
    "            def create_module(self, spec):\n"
    "                return None\n"
    "            def exec_module(self, module):\n"
    "                module.__file__ = {file!r}\n"
    "                real.exec_module(module)\n"
    "        spec.loader = Loader()\n"
    "        return spec\n"
    "sys.meta_path.insert(0, Moved())\n"
)
CONSOLE = "from rigcheck.tui.entry import main\nsys.argv[0] = 'rigcheck'\nsys.exit(main())\n"
FLEET = "import runpy\nrunpy.run_module('rigcheck.fleet', run_name='__main__', alter_sys=True)\n"


def rigcheck(folder: Path, *args: str, entry: str = CONSOLE) -> subprocess.CompletedProcess[str]:
    """`rigcheck ARGS` (or the fleet agent) with its reference table read from FOLDER/references.json."""
    prelude = MOVED.format(file=str(folder / "references.py")) + entry
    return subprocess.run(
        [sys.executable, "-c", prelude, *args],
        env={**os.environ, "RIGCHECK_STORE": str(folder / "store.db")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("broken", ["good", "truncated", "fifo", "nan"])
def test_a_broken_table_is_one_line_and_exit_4_never_a_hang(tmp_path: Path, broken: str) -> None:
    table = tmp_path / "references.json"
    text = TABLE.read_text(encoding="utf-8")
    if broken == "truncated":
        table.write_text(text[: len(text) // 2])
    elif broken == "fifo":
        os.mkfifo(table)
    elif broken == "nan":
        data = json.loads(text)
        data["references"][0]["value"] = "NaN"
        table.write_text(json.dumps(data))
    else:
        table.write_text(text)
    for args in (["stages"], ["runs"], ["references"]):
        done = rigcheck(tmp_path, *args)
        if broken == "good":
            assert done.returncode == 0, done.stderr
            continue
        assert done.returncode == 4 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith(f"rigcheck: the reference table {table} ") and done.stderr.count("\n") == 1
        assert done.stderr.rstrip().endswith("reinstall rigcheck (`check` and `slurm-health` do not use it)")
    agent = rigcheck(tmp_path, "probe", entry=FLEET)  # torchrun's `-m rigcheck.fleet`, here with no launcher
    if broken == "good":
        assert agent.returncode == 2 and "Traceback" not in agent.stderr, agent.stderr
    else:
        assert agent.returncode == 4 and agent.stderr.count("\n") == 1, agent.stderr
        assert agent.stderr.startswith(f"rigcheck fleet: the reference table {table} "), agent.stderr
