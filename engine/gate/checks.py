"""The gate's own checks: node-wide ones (GPU count, versions) and those a passive read must judge differently
from the full health stage (XIDs since the last check, throttle reasons now, the link at idle, processes)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.health_model import Missing
from rigcheck.engine.facts.xid import CRITICAL_XIDS
from rigcheck.engine.gate.kmsg import KernelLog
from rigcheck.engine.gate.read import GateGpu, NodeReading
from rigcheck.engine.hw.throttle import HARDWARE_SIGNALS as HARDWARE_REASONS
from rigcheck.engine.hw.throttle import SOFT_REASONS
from rigcheck.engine.stages.health.checks import BUSY_PCT, STAGE

RECOVERY_XID = 154  # "GPU recovery action changed": the driver names what it needs (NVIDIA's Xid catalog)
NO_ACTION = {"None", "none"}
# as the run's unseen-user evidence judges (engine/trust/unseen.py): memory no listed process holds below this is
# the driver's bookkeeping (a context is about 500 MiB); a GPU this busy or more with no process here did work
UNLISTED_MIN = 256 * 2**20
IDLE_PCT = 5.0


def verdict(
    check: str, device: str, status: Status, text: str, short: str, numbers: dict[str, Any] | None = None
) -> Verdict:
    """A gate verdict; `short` is its few words for the one-line summary a scheduler shows."""
    return Verdict(STAGE, check, status, text, (numbers or {}) | {"short": short}, device=device)


def gpu_count(reading: NodeReading, expected: int | None, source: str) -> Verdict:
    found = len(reading.gpus)
    numbers = {"found": found, "expected": expected, "pci": reading.pci_gpus}
    nvidia = sum(g.health.vendor == "NVIDIA" for g in reading.gpus)
    if reading.unknown:  # a driver that cannot be read cannot be counted
        why = f"GPUs could not be counted: {'; '.join(reading.unknown)}"
        return verdict("gpu-count", "node", Status.SKIP, why, "GPUs not counted", numbers | {"missing": why})
    if reading.pci_gpus > nvidia:
        text = (
            f"the PCI bus lists {reading.pci_gpus} NVIDIA GPU(s) but the driver reaches {nvidia}: a GPU has fallen "
            "off the bus or failed to initialise; reset or reboot"
        )
        return verdict(
            "gpu-count", "node", Status.FAIL, text, f"{nvidia} of {reading.pci_gpus} GPUs on the bus", numbers
        )
    if expected is None:
        text = f"{found} GPU(s) found; nothing to compare with (no --expect-gpus and no earlier clean check)"
        return verdict("gpu-count", "node", Status.SKIP, text, f"{found} GPUs, none expected", numbers)
    if found < expected:
        text = f"{found} GPU(s) found, {expected} expected ({source}): a GPU is missing"
        return verdict("gpu-count", "node", Status.FAIL, text, f"{found} of {expected} GPUs", numbers)
    if found > expected:
        text = f"{found} GPU(s) found, {expected} expected ({source})"
        return verdict("gpu-count", "node", Status.WARN, text, f"{found} GPUs, {expected} expected", numbers)
    return verdict(
        "gpu-count", "node", Status.PASS, f"{found} GPU(s) found, as expected ({source})", f"{found} GPUs", numbers
    )


def versions(reading: NodeReading) -> Verdict:
    """Every GPU of a vendor on one VBIOS: a mixed node is a half-done firmware update."""
    by_version: dict[str, list[str]] = {}
    unread = []
    for gpu in reading.gpus:
        if isinstance(gpu.vbios, Missing):
            unread.append(gpu.label)
        else:
            by_version.setdefault(f"{gpu.health.vendor} VBIOS {gpu.vbios}", []).append(gpu.label)
    drivers = (
        ", ".join(f"{vendor} driver {version}" for vendor, version in reading.driver.items()) or "no driver version"
    )
    numbers = {"drivers": reading.driver, "vbios": by_version, "unread": unread}
    vendors = Counter(key.split(" ", 1)[0] for key in by_version)
    mixed = [vendor for vendor, n in vendors.items() if n > 1]
    if mixed:
        listed = "; ".join(f"{key}: {', '.join(labels)}" for key, labels in by_version.items())
        text = f"the GPUs run different VBIOS versions ({listed}): a firmware update was left half done"
        return verdict("versions", "node", Status.WARN, text, "mixed VBIOS versions", numbers)
    if not by_version:
        why = "; ".join(gpu.vbios.why for gpu in reading.gpus if isinstance(gpu.vbios, Missing)) or "no GPU"
        return verdict("versions", "node", Status.SKIP, f"{drivers}; VBIOS not read: {why}", "VBIOS not read", numbers)
    listed = ", ".join(by_version)
    extra = f" ({', '.join(unread)} not read)" if unread else ""
    return verdict("versions", "node", Status.PASS, f"{drivers}; every GPU on {listed}{extra}", "versions", numbers)


def _recovery(log: KernelLog, bus: str | None) -> str | None:
    actions = [r.recovery for r in log.records if r.bus == bus and r.code == RECOVERY_XID and r.recovery]
    return actions[-1] if actions else None


def xids(gpu: GateGpu, log: KernelLog | Missing, cursor: dict[str, Any] | None) -> Verdict:
    """XIDs for this GPU: a fatal one since boot fails (its recovery is a reset or a reboot, which clears the
    log); any other only warns when it is new since the last check."""
    if isinstance(log, Missing):
        return verdict(
            "xid",
            gpu.label,
            Status.SKIP,
            f"{gpu.label} XIDs not checked: {log.why}",
            "kernel log unread",
            {"missing": log.why},
        )
    if gpu.health.vendor != "NVIDIA":
        why = "XIDs are the NVIDIA driver's; amdgpu reports memory faults through RAS"
        return verdict("xid", gpu.label, Status.SKIP, f"{gpu.label} {why}", "no XIDs", {"missing": why})
    bus = gpu.health.bus_id
    same_boot = cursor is not None and cursor.get("boot_id") == log.boot_id
    after = int(cursor.get("last_seq", 0)) if same_boot and cursor else 0
    mine = [r for r in log.records if r.bus == bus]
    new = Counter(r.code for r in mine if r.seq > after)
    seen = Counter(r.code for r in mine)
    action = _recovery(log, bus)
    numbers = {"codes": dict(seen), "new": dict(new), "recovery": action, "after_seq": after}
    fatal = [c for c in seen if c in CRITICAL_XIDS]
    needs_action = action is not None and action not in NO_ACTION
    if fatal or needs_action:
        words = ", ".join(f"XID {c} ({CRITICAL_XIDS[c]}) x{seen[c]}{' new' if new[c] else ''}" for c in fatal)
        words = words or f"XID {RECOVERY_XID}"
        then = f"; the driver asks: {action}" if action else "; reset the GPU or reboot"
        text = f"{gpu.label} logged {words} since boot{then}"
        short = f"{gpu.label} XID {fatal[0]}" if fatal else f"{gpu.label} {action}"
        return verdict("xid", gpu.label, Status.FAIL, text, short[:40], numbers)
    if new:
        words = ", ".join(f"XID {c} x{n}" for c, n in sorted(new.items()))
        text = f"{gpu.label} logged {words} since the last check: often an application's fault, sometimes the driver's"
        return verdict("xid", gpu.label, Status.WARN, text, f"{gpu.label} new XID {min(new)}", numbers)
    old = f" ({', '.join(f'XID {c} x{n}' for c, n in sorted(seen.items()))} before the last check)" if seen else ""
    return verdict(
        "xid", gpu.label, Status.PASS, f"{gpu.label} has no new XID in the kernel log{old}", "no XID", numbers
    )


def throttle_now(gpu: GateGpu) -> Verdict:
    """Clock limits now: a power cap under load is the normal state of a busy GPU; a hardware signal never is."""
    state = gpu.health.idle_clocks
    if isinstance(state, Missing):
        return verdict(
            "throttle",
            gpu.label,
            Status.SKIP,
            f"{gpu.label} throttle reasons not read: {state.why}",
            "throttle unread",
            {"missing": state.why},
        )
    reasons = list(state["reasons"])
    hardware = [r for r in reasons if r in HARDWARE_REASONS]
    other = [r for r in reasons if r not in HARDWARE_REASONS and r not in SOFT_REASONS]
    shown = ", ".join(reasons) or "none"
    if hardware:
        text = (
            f"{gpu.label} is held down now by {', '.join(hardware)}: a power supply, cooling or external brake signal"
        )
        return verdict("throttle", gpu.label, Status.FAIL, text, f"{gpu.label} {hardware[0]}", state)
    if other:
        busy = state.get("utilization_pct")
        load = f" at {busy}% utilization" if busy is not None else ""
        text = f"{gpu.label} is held down now by {', '.join(other)}{load}: check its cooling"
        return verdict("throttle", gpu.label, Status.WARN, text, f"{gpu.label} {other[0]}", state)
    return verdict(
        "throttle",
        gpu.label,
        Status.PASS,
        f"{gpu.label} has no fault holding its clocks (reasons: {shown})",
        "clocks",
        state,
    )


def pcie_now(gpu: GateGpu) -> Verdict:
    """Width below its maximum is a fault at any load; a lower generation is one only while the GPU is busy,
    since an idle GPU lowers its link to save power and a passive check cannot load it."""
    link = gpu.health.pcie
    if isinstance(link, Missing):
        return verdict(
            "pcie",
            gpu.label,
            Status.SKIP,
            f"{gpu.label} PCIe link not read: {link.why}",
            "PCIe unread",
            {"missing": link.why},
        )
    now, top = f"Gen{link['gen']} x{link['width']}", f"Gen{link['max_gen']} x{link['max_width']}"
    if link["width"] < link["max_width"]:
        text = (
            f"{gpu.label} PCIe link trained at x{link['width']} of x{link['max_width']} ({now}, maximum {top}): "
            "reseat the GPU or check its riser"
        )
        return verdict("pcie", gpu.label, Status.WARN, text, f"{gpu.label} PCIe x{link['width']}", dict(link))
    idle = gpu.health.idle_clocks
    busy = isinstance(idle, dict) and (idle.get("utilization_pct") or 0) > BUSY_PCT
    if link["gen"] < link["max_gen"] and busy:
        text = f"{gpu.label} PCIe link at {now} while busy, its maximum is {top}"
        return verdict("pcie", gpu.label, Status.WARN, text, f"{gpu.label} PCIe Gen{link['gen']}", dict(link))
    if link["gen"] < link["max_gen"]:
        text = f"{gpu.label} PCIe link at {now} while idle (it saves power so), full width of {top}"
        return verdict("pcie", gpu.label, Status.PASS, text, "PCIe", dict(link))
    return verdict("pcie", gpu.label, Status.PASS, f"{gpu.label} PCIe link at {now}, its maximum", "PCIe", dict(link))


def unseen_users(gpu: GateGpu) -> list[str]:
    """What shows a user of this GPU that rigcheck cannot see (another container or PID namespace), in words:
    a listed pid that is not in this namespace, memory that no listed process holds, work with no process here."""
    found = [] if isinstance(gpu.processes, Missing) else gpu.processes
    words = [f"pid {p['pid']} (not in this PID namespace)" for p in found if not p.get("seen", True)]
    if gpu.unlisted is not None and gpu.unlisted >= UNLISTED_MIN:
        words.append(f"{gpu.unlisted / 2**30:.1f} GiB that no listed process holds")
    idle = gpu.health.idle_clocks
    busy = idle.get("utilization_pct") if isinstance(idle, dict) else None
    if isinstance(busy, int | float) and busy > IDLE_PCT and not any(p.get("seen", True) for p in found):
        words.append(f"{busy:g}% busy with no process of this namespace on it")
    return words


def processes(gpu: GateGpu, expect_idle: bool) -> Verdict:
    """Who else uses the GPU: a listed process warns only where it should be idle (--expect-idle); a process
    rigcheck cannot see warns always, and fails a GPU that should be idle (a job prolog must not be told free)."""
    found = gpu.processes
    if isinstance(found, Missing):
        return verdict(
            "processes",
            gpu.label,
            Status.SKIP,
            f"{gpu.label} processes not listed: {found.why}",
            "processes unread",
            {"missing": found.why},
        )
    unseen = unseen_users(gpu)
    numbers: dict[str, Any] = {"pids": [p["pid"] for p in found], "processes": found, "unlisted_bytes": gpu.unlisted}
    if unseen:
        text = f"{gpu.label} is used by a process rigcheck cannot see (another container): {'; '.join(unseen)}"
        if expect_idle:
            text += " (--expect-idle: it is not free)"
        status = Status.FAIL if expect_idle else Status.WARN
        return verdict("processes", gpu.label, status, text, f"{gpu.label} unseen user", numbers | {"unseen": unseen})
    if not found:
        return verdict("processes", gpu.label, Status.PASS, f"{gpu.label} runs no other process", "idle", numbers)
    listed = ", ".join(
        f"pid {p['pid']}" + (f" ({p['used_bytes'] / 2**30:.1f} GiB)" if p.get("used_bytes") else "") for p in found
    )
    if expect_idle:
        text = f"{gpu.label} should be idle (--expect-idle) but runs {listed}: a previous job left it behind?"
        return verdict("processes", gpu.label, Status.WARN, text, f"{gpu.label} busy: pid {found[0]['pid']}", numbers)
    return verdict("processes", gpu.label, Status.PASS, f"{gpu.label} runs {listed}", "processes", numbers)
