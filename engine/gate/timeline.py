"""One GPU's timeline across every run that read its health (the gate's and full runs'), found by UUID."""

from __future__ import annotations

import json
import time
from typing import Any

from rigcheck.engine.gate.memory import gpu_uuid
from rigcheck.engine.stages.health.checks import STAGE


def _num(block: Any, *keys: str) -> str:
    if not isinstance(block, dict):
        return "-"
    for key in keys:
        if isinstance(block.get(key), int):
            return str(block[key])
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
        data = json.loads(row["data"])
        for gpu in data.get("gpus") or []:
            if not isinstance(gpu, dict) or gpu_uuid(gpu) != uuid:
                continue
            link = given if isinstance(given := gpu.get("pcie"), dict) else {}
            rows_ = gpu.get("row_remap") if isinstance(gpu.get("row_remap"), dict) else None
            remapped = (
                "-" if rows_ is None else str(int(rows_.get("correctable", 0)) + int(rows_.get("uncorrectable", 0)))
            )
            codes = (gpu.get("xid") or {}).get("codes") if isinstance(gpu.get("xid"), dict) else None
            out.append(
                {
                    "run": row["id"],
                    "when": time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started"] or 0)),
                    "kind": "check" if row["profile"] == "passive" else row["profile"],
                    "corrected": _num(gpu.get("ecc"), "aggregate_corrected", "volatile_corrected"),
                    "uncorrected": _num(gpu.get("ecc"), "volatile_uncorrected"),
                    "remapped": remapped,
                    "pcie": f"Gen{link['gen']} x{link['width']}" if "gen" in link and "width" in link else "-",
                    "xids": ", ".join(f"{c} x{n}" for c, n in codes.items()) if codes else "-",
                }
            )
    return out
