"""One GPU's timeline across every run that read its health (the gate's and full runs'), found by UUID."""

from __future__ import annotations

import json
import time
from typing import Any

from rigcheck.engine.gate.memory import block, gpu_uuid, point
from rigcheck.engine.gate.outcome import printable
from rigcheck.engine.stages.health.checks import STAGE


def _num(block: Any, *keys: str) -> str:
    if not isinstance(block, dict):
        return "-"
    for key in keys:
        if isinstance(block.get(key), int) and not isinstance(block.get(key), bool):
            return str(block[key])
    return "-"


def _when(started: Any) -> str:
    """A start time as local date and minute; "-" for one a tampered row made unreadable (text, NaN, 1e308)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(started)))
    except (TypeError, ValueError, OverflowError, OSError):
        return "-"


def gpu_timeline(store: Any, uuid: str) -> list[dict[str, Any]]:
    """Rows oldest first: run, when, kind, ECC corrected (lifetime) and uncorrected (volatile), remapped rows,
    the PCIe link and the XIDs logged since boot."""
    rows = store._read(  # the store has no reader for raw facts: one read-only query
        "SELECT r.id AS id, r.started AS started, r.profile AS profile, f.data AS data FROM facts f"
        " JOIN runs r ON r.id = f.run_id WHERE f.stage = ? AND f.data LIKE ? ORDER BY r.id",
        (STAGE, f"%{uuid}%"),
    )
    out = []
    for row in rows:
        try:
            data = json.loads(row["data"])
        except (TypeError, ValueError):
            continue  # a row that cannot be read is left out; the others still show
        gpus = block(data).get("gpus")
        gpus = gpus if isinstance(gpus, list) else []
        for gpu in gpus:
            if not isinstance(gpu, dict) or gpu_uuid(gpu) != uuid:
                continue
            try:
                found = point(int(row["id"]), 0.0, gpu)
            except (TypeError, ValueError, OverflowError):
                continue
            xid = gpu.get("xid")
            codes = xid.get("codes") if isinstance(xid, dict) and isinstance(xid.get("codes"), dict) else None
            out.append(
                {
                    "run": row["id"],
                    "when": _when(row["started"]),
                    "kind": "check" if row["profile"] == "passive" else printable(str(row["profile"])),
                    "corrected": _num(gpu.get("ecc"), "aggregate_corrected", "volatile_corrected"),
                    "uncorrected": _num(gpu.get("ecc"), "volatile_uncorrected"),
                    "remapped": "-" if found.remapped is None else str(found.remapped),
                    "pcie": "-"
                    if found.width is None or not isinstance((gpu.get("pcie") or {}).get("gen"), int)
                    else f"Gen{gpu['pcie']['gen']} x{found.width}",
                    "xids": printable(", ".join(f"{c} x{n}" for c, n in codes.items())) if codes else "-",
                }
            )
    return out
