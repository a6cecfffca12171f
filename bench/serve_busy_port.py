"""How long `rigcheck serve` takes to say its port is taken (issue 34 item 10: it took 11.5 s; the aim is under a
second on a quiet host). Prints each try's wall time and the median; runs anywhere rigcheck is installed."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time

TRIES = 5


def main() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    for extra in ([], ["--device", "cpu"]):  # no --device: serve would ask torch which GPUs there are
        times = []
        for _ in range(TRIES):
            began = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "rigcheck.tui.cli", "serve", *extra, "--port", str(port)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            times.append(time.monotonic() - began)
            assert done.returncode == 6, done.stderr
        shown = " ".join(f"{t:.2f}" for t in times)
        print(f"serve {' '.join(extra) or '(no --device)'} on a taken port, seconds to say so: {shown}")
        print(f"    median {statistics.median(times):.2f} s over {TRIES} tries")
    taken.close()


if __name__ == "__main__":
    main()
