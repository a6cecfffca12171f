"""The kernel log's NVIDIA XIDs, each with the record's sequence number, so a check can tell the new from the seen.

/dev/kmsg records read "priority,sequence,microseconds,flags;message"; a saved plain log (dmesg) has no
sequence, so its line number stands in. The boot id says whether sequence numbers still compare.

Everything in the log is untrusted text: any local user can put words in it (a program's file name in a
segfault line). Only a line the driver wrote counts as an XID (engine/facts/xid.py's XID_LINE), and what the
gate keeps of one is numbers and words of its own: a code, a bus id, and a recovery action from NVIDIA's list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.facts.health_model import Missing
from rigcheck.engine.facts.xid import XID_LINE, read_kmsg
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.hw.sysfs import read_text

KMSG = Path("/dev/kmsg")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
RECORD = re.compile(r"^\d+,(\d+),\d+,[^;]*;(.*)$")
# XID 154 (drivers from R550): "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
RECOVERY = re.compile(r"recovery action changed from .*? to (0x[0-9a-fA-F]{1,8})\b")
# NVIDIA's recovery actions by code (the XID catalog); the words in the line itself are never repeated
ACTIONS = {0: "None", 1: "GPU Reset Required", 2: "Node Reboot Required", 3: "Drain P2P", 4: "Drain and Reset"}


@dataclass(frozen=True)
class XidRecord:
    seq: int
    bus: str  # "0000:18:00.0"
    code: int
    recovery: str | None  # NVIDIA's recovery action where the driver names one (XID 154)


@dataclass(frozen=True)
class KernelLog:
    records: list[XidRecord]
    last_seq: int  # the newest record read, XID or not: the next check's cursor
    boot_id: str
    lines: list[str]  # every message, for readers that count XIDs since boot


def _records(raw: list[str]) -> list[tuple[int, str, str]]:
    """(sequence, whole line, message) for each line; a line without a kmsg header takes its line number."""
    out = []
    for number, chunk in enumerate("".join(raw).splitlines(), start=1):
        match = RECORD.match(chunk)
        out.append((int(match.group(1)), chunk, match.group(2)) if match else (number, chunk, chunk))
    return out


def recovery_action(message: str) -> str | None:
    """The action an XID 154 line asks for, in NVIDIA's words for its code; None where the line names none."""
    found = RECOVERY.search(message)
    if found is None:
        return None
    code = int(found.group(1), 16)
    return ACTIONS.get(code, f"recovery action 0x{code:x}")


def read_kernel_log(path: Path | None = None) -> KernelLog | Missing:
    """The XIDs in /dev/kmsg (or a saved log at `path`), or Missing saying why the log could not be read."""
    if path is None:
        raw = read_kmsg(KMSG)
        boot = read_text(BOOT_ID) or "unknown"
    else:
        try:
            raw = [path.read_text(errors="replace")]
        except OSError as error:
            return Missing(f"the kernel log {path} is not readable: {error.strerror or error}")
        boot = f"file:{path}"
    if isinstance(raw, Missing):
        return raw
    records, last = [], 0
    lines = []
    for seq, line, message in _records(raw):
        last = max(last, seq)
        lines.append(message)
        match = XID_LINE.match(line)  # the header kept: a user's write to /dev/kmsg is not the kernel's
        bus = normalise_bus_id(match.group(1) + ".0") if match else None
        if match and bus and len(match.group(2)) <= 6:
            records.append(XidRecord(seq, bus, int(match.group(2)), recovery_action(message)))
    return KernelLog(records, last, boot, lines)
