"""Cheap Linux readings for the 10 Hz loop: /proc files kept open and re-read with pread, no psutil objects.

psutil opens each file anew and calls sysconf on every reading; at 10 Hz that alone costs over 1%
of a core on a small VM.
"""

from __future__ import annotations

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ProcFile:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def read(self) -> bytes:
        return os.pread(self.fd, 1 << 16, 0)

    def close(self) -> None:
        os.close(self.fd)


class CpuBusy:
    """Per-CPU busy percentages between successive calls, from /proc/stat."""

    def __init__(self, path: str = "/proc/stat") -> None:
        self.file = ProcFile(path)
        self._last = self._times()

    def _times(self) -> list[tuple[int, int]]:
        out = []
        for line in self.file.read().split(b"\n"):
            if line.startswith(b"cpu") and line[3:4].isdigit():
                fields = [int(x) for x in line.split()[1:]]
                idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
                out.append((sum(fields[:8]), idle))  # guest time is already inside user
        return out

    def percent(self) -> tuple[float, ...]:
        now = self._times()
        result = []
        for (total, idle), (last_total, last_idle) in zip(now, self._last, strict=False):
            elapsed = total - last_total
            result.append(0.0 if elapsed <= 0 else 100.0 * (1 - (idle - last_idle) / elapsed))
        self._last = now
        return tuple(result)


class ProcessTicks:
    """CPU seconds used so far by one process (user + system), from /proc/PID/stat."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.file = ProcFile(f"/proc/{pid}/stat")

    def seconds(self) -> float:
        data = self.file.read()
        if not data:
            raise ProcessLookupError(self.pid)
        fields = data[data.rindex(b")") + 2 :].split()  # the name may hold spaces
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def close(self) -> None:
        self.file.close()
