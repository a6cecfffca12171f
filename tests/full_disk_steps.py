"""Steps run inside a private mount namespace with a tiny tmpfs at argv[1]: a run that fills the disk, the
readers on the full disk, then the store once space is freed. Results go to the JSON file argv[2]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, str(Path(__file__).resolve().parent / "store_fault_cli.py")]


def call(*args: str) -> dict[str, object]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=240, check=False)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}


def fill_to_the_last_byte(path: Path) -> None:
    with open(path, "wb") as filler:
        try:
            for size in (1 << 16, 4096, 512, 1):
                while True:
                    filler.write(b"x" * size)
                    filler.flush()
        except OSError:
            pass


def main(folder: Path, results: Path) -> None:
    os.environ.update(RIGCHECK_STORE=str(folder / "s.db"), FILL_PATH=str(folder / "filler"), COLUMNS="160")
    found: dict[str, object] = {"run": call("run", "fill", "--no-telemetry")}
    fill_to_the_last_byte(folder / "filler2")  # whatever the run gave back is taken again
    found["free"] = os.statvfs(folder).f_bavail
    for name, args in {
        "runs": ("runs",),
        "show": ("show", "1"),
        "export": ("export", "1", "--format", "json"),
        "follow": ("follow", "1"),
    }.items():
        found[name] = call(*args)
    found["files"] = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    for filler in ("filler", "filler2"):
        (folder / filler).unlink()
    found["show_after"] = call("show", "1")
    found["runs_after"] = call("runs")
    results.write_text(json.dumps(found))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
