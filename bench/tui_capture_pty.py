"""Runs the app in a pseudo-terminal and prints the screen at set times, for machines without tmux.

Usage: python bench/tui_capture_pty.py OUTDIR COLS ROWS KEYS_AT... -- rigcheck args
KEYS_AT items look like 2:a (press 'a' at 2 s), 40:@ (save the screen at 40 s), 95:^q (ctrl+q).
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pyte


def main() -> None:
    out, cols, rows = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    split = sys.argv.index("--")
    plan = sorted((float(t), k) for t, k in (item.split(":", 1) for item in sys.argv[4:split]))
    command = sys.argv[split + 1 :]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    start = time.monotonic()
    shots = 0
    while proc.poll() is None or select.select([master], [], [], 0)[0]:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                stream.feed(os.read(master, 65536))
            except OSError:
                break
        now = time.monotonic() - start
        while plan and plan[0][0] <= now:
            _, key = plan.pop(0)
            if key == "@":
                shots += 1
                text = "\n".join(screen.display)
                (out / f"screen-{shots}.txt").write_text(text)
                print(f"--- screen at {now:.0f} s ---\n{text}", flush=True)
            else:
                os.write(master, b"\x11" if key == "^q" else key.encode())
        if not plan and proc.poll() is not None:
            break
    proc.wait(10)
    print(f"app exited with {proc.returncode}")


if __name__ == "__main__":
    main()
