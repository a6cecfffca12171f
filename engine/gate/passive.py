"""The passive check: read the node, judge it, compare each GPU with its history, and keep a short run in the store.

The store is optional (None: judge only, as a read-only store or `--no-store` asks). Its memory across checks is
a bonus, never a precondition: a store that cannot be read (damaged, a NaN in a stored counter) or written (a
full disk) costs the history, never the answer.
"""

from __future__ import annotations

import json
import math
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.health_model import Missing
from rigcheck.engine.gate import checks, memory
from rigcheck.engine.gate.keep import PROFILE, keep_check
from rigcheck.engine.gate.kmsg import KernelLog
from rigcheck.engine.gate.outcome import OK, exit_code, state_of, summary
from rigcheck.engine.gate.read import GateGpu, NodeReading, no_gpu_found, read_node
from rigcheck.engine.stages.health import checks as health
from rigcheck.engine.stages.health.checks import STAGE

__all__ = ["PROFILE", "GateResult", "earlier_health", "keep", "passive_check"]
HISTORY_RUNS = 500  # earlier health facts read for each check: months of checks every few minutes per GPU


@dataclass
class GateResult:
    state: str
    line: str
    verdicts: list[Verdict]
    reading: NodeReading
    run_id: int | None = None
    store_error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    cause: str | None = None  # the drain reason's words where the line's would not do (a check that timed out)

    def code(self, style: str) -> int:
        return exit_code(self.state, style)


def plain(value: Any) -> Any:
    """A counter as JSON-ready data: Missing becomes {"missing": why} (as the health stage stores it)."""
    if isinstance(value, Missing):
        return {"missing": value.why}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def earlier_health(store: Any) -> list[tuple[int, float, str, dict[str, Any]]]:
    """(run id, started, profile, health facts) of earlier runs on this host, newest first."""
    rows = store._read(  # the store has no reader for raw facts: one read-only query
        "SELECT r.id AS id, r.started AS started, r.profile AS profile, f.data AS data FROM facts f"
        " JOIN runs r ON r.id = f.run_id WHERE f.stage = ? AND f.host = '' AND r.host = ?"
        " ORDER BY r.id DESC LIMIT ?",
        (STAGE, socket.gethostname(), HISTORY_RUNS),
    )
    out = []
    for row in rows:  # a row that cannot be read is left out: one damaged check never hides the others
        try:
            data = json.loads(row["data"])
            started = float(row["started"] or 0)
        except (TypeError, ValueError):
            continue
        if isinstance(data, dict) and math.isfinite(started):
            out.append((int(row["id"]), started, str(row["profile"] or ""), data))
    return out


def _expected(earlier: list[tuple[int, float, str, dict[str, Any]]], asked: int | None) -> tuple[int | None, str]:
    if asked is not None:
        return asked, "--expect-gpus"
    for run_id, _, profile, data in earlier:
        gate = data.get("gate") or {}
        if profile == PROFILE and gate.get("state") == OK and isinstance(gate.get("count"), int):
            return gate["count"], f"as in run {run_id}, the last clean check"
    return None, ""


def _cursor(earlier: list[tuple[int, float, str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The newest check's place in the kernel log; None where it is not a whole number (a tampered row)."""
    for _, _, profile, data in earlier:
        if profile == PROFILE and isinstance(data.get("kmsg"), dict):
            seq = data["kmsg"].get("last_seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                return {"boot_id": str(data["kmsg"].get("boot_id")), "last_seq": seq}
            return None
    return None


def _history(gpu: GateGpu, record: dict[str, Any], rows: list[tuple[int, float, dict[str, Any]]]) -> list[Verdict]:
    """This GPU against its history; a history that cannot be read is a note, never a failure to check."""
    try:
        return memory.compare(memory.Gpu(gpu.label, gpu.uuid), record, rows)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        text = f"{gpu.label} {gpu.uuid}: its history in the store could not be read ({type(error).__name__})"
        return [checks.verdict("history", gpu.label, Status.SKIP, text, "history unread", {})]


def gpu_record(gpu: GateGpu, log: KernelLog | Missing) -> dict[str, Any]:
    """What the store keeps of one GPU: enough for its history and for `history --gpu`."""
    health = gpu.health
    codes: dict[int, int] = {}
    if isinstance(log, KernelLog):
        for record in log.records:
            if record.bus == health.bus_id:
                codes[record.code] = codes.get(record.code, 0) + 1
    return {
        "label": gpu.label,
        "index": health.index,
        "uuid": gpu.uuid,
        "vendor": health.vendor,
        "name": health.name,
        "bus_id": health.bus_id,
        "vbios": plain(gpu.vbios),
        "ecc": plain(health.ecc),
        "retired_pages": plain(health.retired_pages),
        "row_remap": plain(health.row_remap),
        "pcie": plain(health.pcie),
        "power": plain(health.power),
        "persistence": plain(health.persistence),
        "throttle": plain(health.idle_clocks),
        "processes": plain(gpu.processes),
        "xid": {"codes": codes} if isinstance(log, KernelLog) else plain(log),
    }


def judge_gpu(gpu: GateGpu, reading: NodeReading, cursor: dict[str, Any] | None, expect_idle: bool) -> list[Verdict]:
    health_ = gpu.health
    if "unreachable" in health_.extra:
        text = f"{gpu.label} is listed by the driver but cannot be reached: {health_.extra['unreachable']}"
        return [
            checks.verdict("reachable", gpu.label, Status.FAIL, text, f"{gpu.label} unreachable", dict(health_.extra))
        ]
    found = [
        health.ecc(gpu.label, health_),
        health.retired_pages(gpu.label, health_),
        health.row_remap(gpu.label, health_),
        checks.xids(gpu, reading.kernel_log, cursor),
        checks.pcie_now(gpu),
        health.persistence(gpu.label, health_),
        health.power_limit(gpu.label, health_),
        checks.throttle_now(gpu),
        health.partition(gpu.label, health_),
        health.fabric(gpu.label, health_),
        checks.processes(gpu, expect_idle),
    ]
    return found


def keep(store: Any, result: GateResult, argv: list[str]) -> None:
    """Keep the check in the store's health timeline; a store that cannot take it is said in store_error."""
    try:
        result.run_id = keep_check(store, result.code("rigcheck"), result.verdicts, result.facts, argv)
    except Exception as error:  # a full disk, a read-only, locked or damaged store: the answer stands
        result.store_error = f"not stored: {error}"


def passive_check(
    store: Any | None,
    expect_gpus: int | None = None,
    kernel_log: Path | None = None,
    expect_idle: bool = False,
    argv: list[str] | None = None,
    reading: NodeReading | None = None,
    store_after: bool = True,
) -> GateResult:
    """Read, judge and (where there is a store, unless `store_after` is False: the caller keeps it once it has
    acted) keep one passive check of this node."""
    earlier: list[tuple[int, float, str, dict[str, Any]]] = []
    store_error = None
    if store is not None:
        try:
            earlier = earlier_health(store)
        except Exception as error:  # a damaged store loses the history, not the answer
            store_error = f"history not read: {type(error).__name__}: {error!r}"
    reading = reading or read_node(kernel_log)
    if expect_gpus == 0 and not reading.gpus and not reading.pci_gpus:
        # asked for none and none anywhere, not even on the PCI bus: a CPU node of a mixed cluster, checked
        reading.unknown = [why for why in reading.unknown if why != no_gpu_found(reading)]
    expected, source = _expected(earlier, expect_gpus)
    cursor = _cursor(earlier)
    history_rows = [(run_id, started, data) for run_id, started, _, data in earlier]
    verdicts = [checks.gpu_count(reading, expected, source), checks.versions(reading)]
    records = []
    for gpu in reading.gpus:
        record = gpu_record(gpu, reading.kernel_log)
        records.append(record)
        verdicts += judge_gpu(gpu, reading, cursor, expect_idle)
        verdicts += _history(gpu, record, history_rows)
    state = state_of(verdicts, reading.unknown)
    line = summary(state, verdicts, reading.unknown, len(reading.gpus))
    log = reading.kernel_log
    facts: dict[str, Any] = {
        "gate": {
            "state": state,
            "summary": line,
            "count": len(reading.gpus),
            "expected": expected,
            "unknown": reading.unknown,
            "absent": reading.absent,
            "drivers": reading.driver,
            "pci_gpus": reading.pci_gpus,
        },
        "gpus": records,
    }
    if isinstance(log, KernelLog):
        facts["kmsg"] = {"boot_id": log.boot_id, "last_seq": log.last_seq}
    result = GateResult(state, line, verdicts, reading, facts=facts, store_error=store_error)
    if store is not None and store_after:
        keep(store, result, argv or [])
    return result
