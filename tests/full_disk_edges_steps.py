"""Run inside a private mount namespace with a tiny tmpfs at argv[1]: leave argv[2] KiB free (on a new store, or
one made while there was room when argv[3] is `existing`), run `rigcheck run probe`, then free the disk and
read what the store says of the run. Results go to the JSON file argv[4]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "rigcheck.tui.cli"]


def fill_leaving(folder: Path, keep: int) -> None:
    with open(folder / "filler", "wb") as filler:
        try:
            while True:
                info = os.statvfs(folder)
                free = info.f_bavail * info.f_frsize
                if free <= keep:
                    return
                filler.write(b"x" * min(4096, free - keep))
                filler.flush()
        except OSError:
            return


def main(folder: Path, keep_kib: int, kind: str, results: Path) -> None:
    os.environ.update(RIGCHECK_STORE=str(folder / "e.db"), COLUMNS="160")
    if kind == "existing":
        subprocess.run([*CLI, "runs"], capture_output=True, timeout=120, check=True)
    fill_leaving(folder, keep_kib * 1024)
    done = subprocess.run(
        [*CLI, "run", "probe", "--device", "cpu", "--no-telemetry"], capture_output=True, text=True, timeout=240
    )
    found: dict[str, object] = {"rc": done.returncode, "err": done.stderr}
    (folder / "filler").unlink()
    found["files"] = sorted(p.name for p in folder.iterdir())
    if (folder / "e.db").exists():
        from rigcheck.engine.store import Store

        found["runs"] = [dict(r) for r in Store(folder / "e.db").runs()]
    results.write_text(json.dumps(found, default=str))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], Path(sys.argv[4]))
