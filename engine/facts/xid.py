"""NVIDIA XID errors since boot, read from the kernel log (the driver reports them nowhere else)."""

from __future__ import annotations

import errno
import os
import re
from collections import Counter
from pathlib import Path

from rigcheck.engine.facts.health_model import Missing
from rigcheck.engine.hw.pci import normalise_bus_id

# Only a line the NVIDIA driver wrote is an XID: "NVRM: Xid" opens the kernel's message, after a /dev/kmsg header
# of the kernel's own facility (priority 0-7; a user's write to /dev/kmsg is facility 1 or more) or a dmesg
# timestamp in a saved log. The same words later in a message (a program's file name in a segfault line) are
# any local user's to choose (issue 44).
_KMSG_HEAD = r"(?:[0-7],\d+,\d+,[^;]*;)?"
_DMESG_HEAD = r"(?:<[0-7]>)?(?:\[\s*\d+\.\d+\]\s?|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]\s?)?"
XID_LINE = re.compile(
    "^" + _KMSG_HEAD + _DMESG_HEAD + r"NVRM: Xid \(PCI:([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+)(?:\.\d)?\): (\d+)"
)

# The XIDs that mean the hardware or its memory failed, in words; others are often an application's fault.
CRITICAL_XIDS = {
    48: "double-bit ECC error",
    63: "row remap recorded",
    64: "row remap failed",
    74: "NVLink error",
    79: "GPU fell off the bus",
    92: "high single-bit ECC rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP timeout",
    120: "GSP error",
}


def read_kmsg(path: Path = Path("/dev/kmsg")) -> list[str] | Missing:
    """Every record still in the kernel's ring buffer, or Missing when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        why = "not readable by this user (kernel.dmesg_restrict)" if error.errno in (errno.EPERM, errno.EACCES) else ""
        return Missing(f"the kernel log {path} is {why or f'not readable: {error.strerror}'}; XIDs are logged there")
    lines: list[str] = []
    try:
        while True:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as error:
                if error.errno == errno.EPIPE:  # a record was overwritten while reading: carry on
                    continue
                break
            if not record:
                break
            lines.append(record.decode(errors="replace"))
    finally:
        os.close(fd)
    return lines


def xids_by_bus(lines: list[str]) -> dict[str, Counter[int]]:
    """XID codes counted per GPU bus id ("0000:18:00.0")."""
    found: dict[str, Counter[int]] = {}
    for line in lines:
        match = XID_LINE.search(line)
        if match:
            bus = normalise_bus_id(match.group(1) + ".0") or match.group(1)
            found.setdefault(bus, Counter())[int(match.group(2))] += 1
    return found
