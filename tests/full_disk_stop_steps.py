"""Run inside a private mount namespace with a tiny tmpfs at argv[1]: a run whose disk fills mid-way, in the
foreground (argv[2] `foreground`) or detached and followed live (`detached`). Results go to the JSON file argv[3]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

CLI = [sys.executable, str(Path(__file__).resolve().parent / "full_disk_stop_cli.py")]


def call(*args: str) -> dict[str, object]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=240, check=False)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}


def stored(folder: Path) -> dict[str, object]:
    """What the store says of run 1, read once the disk has room again."""
    for filler in ("filler",):
        (folder / filler).unlink(missing_ok=True)
    from rigcheck.engine.store import Store

    report = Store(folder / "s.db").report(1)
    assert report is not None
    return {
        "run": {key: report["run"][key] for key in ("status", "exit_code", "error")},
        "verdicts": [[v["stage"], v["status"], v["explanation"]] for v in report["verdicts"]],
        "show": call("show", "1"),
    }


def subscribed(engine_pid: int, control: str) -> bool:
    """Whether the engine has accepted a connection on its control socket (an accepted unix socket carries the
    listener's path): the follower has joined the run's stream."""
    try:
        paths = [c.laddr for c in psutil.Process(engine_pid).net_connections(kind="unix")]
    except psutil.NoSuchProcess:
        return False
    return paths.count(control) >= 2  # the listener and one accepted connection


def detached(folder: Path) -> dict[str, object]:
    started = call("run", "fill_on_go", "steady", "--no-telemetry", "--detach")
    assert started["rc"] == 0, started
    engine_pid = int(str(started["out"]).split("engine pid ")[1].split(")")[0])
    follow = subprocess.Popen([*CLI, "follow", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from rigcheck.engine.store import Store

    deadline = time.monotonic() + 120
    control = None
    while time.monotonic() < deadline and follow.poll() is None:
        control = control or Store(folder / "s.db").run(1)["control"]
        if control and subscribed(engine_pid, control):
            break
        time.sleep(0.05)
    else:
        follow.kill()
        raise AssertionError(f"the follower never joined the stream: {follow.communicate()}")
    (folder / "go").touch()
    out, err = follow.communicate(timeout=240)
    psutil.Process(engine_pid).wait(60) if psutil.pid_exists(engine_pid) else None
    return {"follow": {"rc": follow.returncode, "out": out, "err": err}}


def main(folder: Path, mode: str, results: Path) -> None:
    os.environ.update(
        RIGCHECK_STORE=str(folder / "s.db"),
        FILL_PATH=str(folder / "filler"),
        GO_PATH=str(folder / "go"),
        COLUMNS="200",
    )
    found = call("run", "fill", "steady", "--no-telemetry") if mode == "foreground" else detached(folder)
    found |= stored(folder)
    results.write_text(json.dumps(found))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
