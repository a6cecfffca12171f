"""The gate as a scheduler runs it, when things around it fail (issues 43 and 44): a hung driver's check answers,
is kept and would drain; a store that cannot be used still gets an answer; an empty value or a node list is bad
input; and `check` does not load the reference table at all."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from gate_fakes import gate_env, gate_library_fixture, write_state  # noqa: F401 - a fixture

ENTRY = "import sys; from rigcheck.tui.entry import main; sys.argv[0] = 'rigcheck'; sys.exit(main())"
# what a broken references.json does to any process that loads it (a truncated file: a traceback; a FIFO: a hang)
BLOCKED = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name == 'rigcheck.engine.measure.references':\n"
    "            raise SystemExit('REFERENCES LOADED')\n"
    "sys.meta_path.insert(0, Block())\n"
)


def rigcheck(
    library: Path, state: Path, *args: str, env: dict[str, str] | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", prelude + ENTRY, *args],
        env=gate_env(library, state) | (env or {}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def fake_scontrol(folder: Path, node: str = "vm") -> dict[str, str]:
    """An scontrol on PATH that shows one idle node and records every other command it is asked."""
    bin_ = folder / "bin"
    bin_.mkdir()
    script = bin_ / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = show ]; then echo "NodeName={node} Arch=x86_64 State=IDLE Partitions=debug"; exit 0; fi\n'
        f'echo "$@" >> {folder / "asked"}\n'
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_}:/usr/bin:/bin"}


@pytest.fixture
def node(gate_library: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    state, log = tmp_path / "state", tmp_path / "kmsg"
    write_state(state)
    log.write_text("")
    return gate_library, state, log


def test_a_hung_drivers_check_is_kept_as_unknown_beside_a_clean_one(
    node: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    library, state, log = node
    store = str(tmp_path / "store.db")
    common = ["--store", store, "check", "--kernel-log", str(log)]
    assert rigcheck(library, state, *common).returncode == 0  # the default 20 s: a busy host is never "hung"
    write_state(state, init_sleep=60)
    hung = rigcheck(library, state, *common, "--timeout", "2")
    assert hung.returncode == 7 and hung.stdout.startswith("UNKNOWN: the check did not finish in 2 s"), hung.stderr
    assert "stored" in hung.stderr
    listed = rigcheck(library, state, "--store", store, "history", "--checks")
    rows = listed.stdout.splitlines()[1:]
    assert rows[0].split()[3] == "UNKNOWN" and "did not finish" in rows[0] and rows[1].split()[3] == "OK", listed
    runs = rigcheck(library, state, "--store", store, "history")
    assert "2 health check(s) kept apart" in runs.stdout and "passive" not in runs.stdout


def test_slurm_health_says_it_would_drain_a_hung_driver(node: tuple[Path, Path, Path], tmp_path: Path) -> None:
    library, state, log = node
    env = fake_scontrol(tmp_path)
    args = ["slurm-health", "--no-store", "--kernel-log", str(log), "--node", "vm", "--dry-run"]
    clean = rigcheck(library, state, *args, env=env)  # the default 20 s: a busy host is never "hung"
    assert clean.returncode == 0 and "slurm: node vm healthy and in service" in clean.stderr
    write_state(state, init_sleep=60)
    args = [*args[:-1], "--timeout", "2", "--dry-run"]
    hung = rigcheck(library, state, *args, "--exit-style", "nagios", env=env)
    assert hung.returncode == 3
    reason = "Reason=rigcheck: hung driver? no answer in 2 s"
    assert f"slurm: would run: scontrol update NodeName=vm State=DRAIN {reason}" in hung.stderr, hung.stderr
    assert not (tmp_path / "asked").exists()
    done = rigcheck(library, state, *args[:-1], env=env)  # not a dry run: scontrol is asked to drain
    assert (tmp_path / "asked").read_text().startswith(f"update NodeName=vm State=DRAIN {reason}"), done.stderr


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["check", "--kernel-log", ""], {}, "--kernel-log"),
        (["check", "--kernel-log", "x" * 5000], {}, "--kernel-log"),
        (["slurm-health", "--node", ""], {}, "--node"),
        (["slurm-health", "--node", "vm,ghost"], {}, "not one Slurm node name"),
        (["slurm-health"], {"SLURMD_NODENAME": "vm,ghost"}, "SLURMD_NODENAME 'vm,ghost' is not one Slurm node"),
    ],
)
def test_an_empty_value_or_a_node_list_is_bad_input(
    node: tuple[Path, Path, Path], tmp_path: Path, args: list[str], env: dict[str, str], words: str
) -> None:
    library, state, _ = node
    done = rigcheck(library, state, *args, "--no-store", env=fake_scontrol(tmp_path) | env)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "asked").exists()


def test_check_does_not_load_the_reference_table(node: tuple[Path, Path, Path], tmp_path: Path) -> None:
    library, state, log = node
    store = str(tmp_path / "store.db")
    done = rigcheck(library, state, "--store", store, "check", "--kernel-log", str(log), prelude=BLOCKED)
    assert done.returncode == 0 and done.stdout.startswith("OK: 2 GPU(s) healthy"), done.stderr
    other = rigcheck(library, state, "--store", store, "references", prelude=BLOCKED)
    assert other.returncode != 0 and "REFERENCES LOADED" in other.stderr  # the block is real


@pytest.mark.parametrize("command", ["check", "slurm-health"])
@pytest.mark.parametrize("before", [["--store", "S"], ["--store=S"], ["--store", "T", "--store=S"]])
def test_python_m_cli_runs_the_gate_without_the_reference_table(
    node: tuple[Path, Path, Path], tmp_path: Path, command: str, before: list[str]
) -> None:
    """What serve's tabs and a hand-written health hook run, `python -m rigcheck.tui.cli`, loaded the whole command
    line and so the table: a truncated or FIFO references.json broke or hung the gate that way."""
    library, state, log = node
    module = "import runpy; runpy.run_module('rigcheck.tui.cli', run_name='__main__', alter_sys=True)"
    store = str(tmp_path / "store.db")
    options = [arg.replace("S", store).replace("T", str(tmp_path / "other.db")) for arg in before]
    extra = ["--node", "vm", "--dry-run"] if command == "slurm-health" else []
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED + module, *options, command, "--kernel-log", str(log), *extra],
        env=gate_env(library, state) | fake_scontrol(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "REFERENCES LOADED" not in done.stderr, done.stderr
    assert done.stdout.startswith("OK: 2 GPU(s) healthy") and "run 1 stored" in done.stderr, done.stderr


def damaged_schema(path: Path) -> None:
    """A store whose schema text is not UTF-8: SQLite's own error message then is not either."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.execute("PRAGMA writable_schema = ON")
    db.execute("UPDATE sqlite_master SET sql = CAST(X'4352454154452054FFFE' AS TEXT) WHERE name = 't'")
    db.commit()
    db.close()


@pytest.mark.parametrize("store_kind", ["good", "junk", "damaged-schema"])
def test_a_store_that_cannot_be_used_still_gets_the_answer(
    node: tuple[Path, Path, Path], tmp_path: Path, store_kind: str
) -> None:
    library, state, log = node
    store = tmp_path / "store.db"
    if store_kind == "junk":
        store.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    elif store_kind == "damaged-schema":
        damaged_schema(store)
    write_state(state, remap_failure1=1)
    done = rigcheck(library, state, "--store", str(store), "check", "--kernel-log", str(log), "--exit-style", "nagios")
    assert done.returncode == 2 and done.stdout.startswith("CRITICAL: nvml:1 row remap failed"), done.stderr
    assert "Traceback" not in done.stderr
    assert ("run 1 stored" in done.stderr) == (store_kind == "good"), done.stderr


def test_a_new_store_on_a_full_disk_still_gets_the_answer(node: tuple[Path, Path, Path], tiny: Path) -> None:
    from test_full_disk import in_tiny_tmpfs

    library, state, log = node
    write_state(state, remap_failure1=1)
    env = [
        f"{key}={value}"
        for key, value in gate_env(library, state).items()
        if key in ("LD_LIBRARY_PATH", "FAKE_NVML_STATE")
    ]
    command = ["env", *env, sys.executable, "-c", ENTRY, "--store", str(tiny / "store.db"), "check"]
    done = in_tiny_tmpfs(tiny, "4k", *command, "--kernel-log", str(log))
    assert done.returncode == 1 and done.stdout.startswith("CRITICAL: nvml:1 row remap failed"), done.stderr
    assert "note:" in done.stderr and "Traceback" not in done.stderr


def test_a_store_held_by_another_writer_costs_the_memory_not_the_deadline(
    node: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    import time

    library, state, log = node
    store = tmp_path / "store.db"
    common = ["--store", str(store), "check", "--kernel-log", str(log)]
    assert rigcheck(library, state, *common).returncode == 0  # the clean case: made and kept
    holder = sqlite3.connect(store, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held past the store's 30 s patience
    try:
        start = time.monotonic()
        done = rigcheck(library, state, *common)
        took = time.monotonic() - start
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 0 and done.stdout.startswith("OK: 2 GPU(s) healthy"), done.stderr
    assert "not stored: the store did not answer in 5 s" in done.stderr and took < 25, (took, done.stderr)
