"""Turns one GPU's health counters into verdicts with their numbers in words; a missing counter is a SKIP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.health_model import GpuHealth, Missing
from rigcheck.engine.facts.xid import CRITICAL_XIDS
from rigcheck.engine.hw import throttle

STAGE = "health"
LANE_GB_S = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}  # per lane, after line coding
CORRECTED_WARN = 1000  # corrected errors since the driver loaded before they are worth a look
BUSY_PCT = 10  # above this utilization the GPU is not idle, so idle clocks cannot be judged
BENIGN_REASONS = throttle.BENIGN_REASONS  # the one table of what each reason means: hw/throttle.py
HARDWARE_REASONS = throttle.HARDWARE_SIGNALS


def share_in_words(share: float) -> str:
    for value, words in ((0.5, "half"), (0.25, "a quarter"), (0.125, "an eighth")):
        if abs(share - value) < 0.02:
            return words
    return f"{share:.0%}"


def _verdict(check: str, label: str, status: Status, text: str, numbers: dict[str, Any] | None = None) -> Verdict:
    return Verdict(STAGE, check, status, f"{label} {text}", numbers or {}, device=label)


CHECK_WORDS = {
    "ecc": "ECC errors",
    "retired-pages": "retired pages",
    "row-remap": "row remapping",
    "xid": "XID errors",
    "pcie": "PCIe link",
    "persistence": "persistence mode",
    "power-limit": "power limit",
    "idle-clocks": "clocks at idle",
    "partition": "MIG or compute partitions",
    "fabric": "NVSwitch fabric",
}


def _skip(check: str, label: str, missing: Missing) -> Verdict:
    text = f"{CHECK_WORDS.get(check, check)} not checked: {missing.why}"
    return _verdict(check, label, Status.SKIP, text, {"missing": missing.why})


def ecc(label: str, gpu: GpuHealth) -> Verdict:
    counts = gpu.ecc
    if isinstance(counts, Missing):
        if gpu.ecc_enabled is False:
            return _verdict(
                "ecc", label, Status.WARN, "has ECC switched off: memory errors go undetected and uncounted"
            )
        return _skip("ecc", label, counts)
    new_bad, life_bad = counts.get("volatile_uncorrected", 0), counts.get("aggregate_uncorrected", 0)
    new_fixed = counts.get("volatile_corrected", 0)
    if new_bad:
        return _verdict(
            "ecc",
            label,
            Status.FAIL,
            f"has {new_bad} uncorrectable ECC error(s) since the driver loaded: the card should not be trusted "
            "with training",
            counts,
        )
    if life_bad:
        return _verdict(
            "ecc",
            label,
            Status.WARN,
            f"has {life_bad} uncorrectable ECC error(s) over its life, none since the driver loaded",
            counts,
        )
    if new_fixed >= CORRECTED_WARN:
        text = f"corrected {new_fixed} ECC errors since the driver loaded (none uncorrectable): memory may be failing"
        return _verdict("ecc", label, Status.WARN, text, counts)
    life = f", {counts['aggregate_corrected']} over its life" if "aggregate_corrected" in counts else ""
    text = f"has no uncorrectable ECC errors; {new_fixed} corrected since the driver loaded{life}"
    return _verdict("ecc", label, Status.PASS, text, counts)


def retired_pages(label: str, gpu: GpuHealth) -> Verdict:
    pages = gpu.retired_pages
    if isinstance(pages, Missing):
        return _skip("retired-pages", label, pages)
    total = pages.get("retired", pages.get("retired_sbe", 0) + pages.get("retired_dbe", 0))
    if pages.get("failed"):
        text = f"could not retire {pages['failed']} bad memory page(s): the bad memory is still in use"
        return _verdict("retired-pages", label, Status.FAIL, text, pages)
    if pages.get("pending"):
        text = (
            f"has a page retirement pending ({total} retired so far): reset the GPU or reboot so the bad page "
            "is taken out of use"
        )
        return _verdict("retired-pages", label, Status.WARN, text, pages)
    return _verdict("retired-pages", label, Status.PASS, f"has {total} retired memory page(s), none pending", pages)


def row_remap(label: str, gpu: GpuHealth) -> Verdict:
    rows = gpu.row_remap
    if isinstance(rows, Missing):
        return _skip("row-remap", label, rows)
    if rows["failure"]:
        text = "failed to remap a bad memory row: it has run out of spare rows and should be replaced"
        return _verdict("row-remap", label, Status.FAIL, text, rows)
    if rows["pending"]:
        text = (
            f"has a row remap pending ({rows['uncorrectable']} rows remapped after uncorrectable errors so far): "
            "reset the GPU so it takes effect; until then the bad row is still in use"
        )
        return _verdict("row-remap", label, Status.WARN, text, rows)
    text = (
        f"has no row remap pending or failed ({rows['uncorrectable']} uncorrectable, {rows['correctable']} "
        "correctable rows remapped onto spares)"
    )
    return _verdict("row-remap", label, Status.PASS, text, rows)


def xid(label: str, gpu: GpuHealth) -> Verdict:
    found = gpu.xid
    if isinstance(found, Missing):
        return _skip("xid", label, found)
    codes: dict[int, int] = found["codes"]
    if not codes:
        return _verdict("xid", label, Status.PASS, "has no XID errors in the kernel log", {"codes": {}})
    listed = ", ".join(
        f"XID {c} x{n}" + (f" ({CRITICAL_XIDS[c]})" if c in CRITICAL_XIDS else "") for c, n in codes.items()
    )
    critical = [c for c in codes if c in CRITICAL_XIDS]
    status = Status.FAIL if critical else Status.WARN
    why = "hardware or memory faults" if critical else "often an application's fault, sometimes the driver's"
    return _verdict("xid", label, status, f"logged {listed} since boot: {why}", {"codes": codes})


def pcie(label: str, link: dict[str, int] | Missing, under_load: bool) -> Verdict:
    if isinstance(link, Missing):
        return _skip("pcie", label, link)
    now = f"Gen{link['gen']} x{link['width']}"
    top = f"Gen{link['max_gen']} x{link['max_width']}"
    slot = ""
    if link.get("gpu_max_gen", link["max_gen"]) > link["max_gen"]:
        slot = f" (the GPU itself could do Gen{link['gpu_max_gen']}; the slot or bridge allows Gen{link['max_gen']})"
    if link["gen"] >= link["max_gen"] and link["width"] >= link["max_width"]:
        return _verdict("pcie", label, Status.PASS, f"PCIe link at {now}, its maximum{slot}", dict(link))
    share = (LANE_GB_S.get(link["gen"], 0) * link["width"]) / (LANE_GB_S.get(link["max_gen"], 1) * link["max_width"])
    when = (
        "while copying to it"
        if under_load
        else "at idle (an idle GPU may lower its link to save power; it could not be loaded to re-read it)"
    )
    text = (
        f"PCIe link at {now} {when}, its maximum is {top}: host-device copies will run at "
        f"{share_in_words(share)} of the speed{slot}"
    )
    return _verdict("pcie", label, Status.WARN, text, dict(link) | {"share": round(share, 3), "under_load": under_load})


def persistence(label: str, gpu: GpuHealth) -> Verdict:
    if isinstance(gpu.persistence, Missing):
        return _skip("persistence", label, gpu.persistence)
    if gpu.persistence:
        return _verdict("persistence", label, Status.PASS, "has persistence mode on", {"enabled": True})
    text = (
        "has persistence mode off: the driver lets go of the GPU between programs, so each start pays its "
        "initialisation again (nvidia-smi -pm 1, or run nvidia-persistenced)"
    )
    return _verdict("persistence", label, Status.WARN, text, {"enabled": False})


def power_limit(label: str, gpu: GpuHealth) -> Verdict:
    power = gpu.power
    if isinstance(power, Missing):
        return _skip("power-limit", label, power)
    limit, default, top = power["limit_w"], power.get("default_w"), power.get("max_w")
    top_text = f", maximum {top:.0f} W" if top else ""
    if default is None:
        text = (
            f"power limit {limit:.0f} W{top_text}; the driver does not report the board's default, so a lowered "
            "limit cannot be told apart from the board's own"
        )
        return _verdict("power-limit", label, Status.SKIP, text, power)
    if limit < default * 0.99:
        text = (
            f"power limit set to {limit:.0f} W, below the board's default {default:.0f} W{top_text}: under full "
            f"load it will run slower than it can"
        )
        return _verdict("power-limit", label, Status.WARN, text, power)
    enforced = power.get("enforced_w")
    if enforced is not None and enforced < limit * 0.99:
        text = f"enforces {enforced:.0f} W, below its set limit {limit:.0f} W (another constraint holds it down)"
        return _verdict("power-limit", label, Status.WARN, text, power)
    text = f"power limit {limit:.0f} W, the board's default {default:.0f} W{top_text}"
    return _verdict("power-limit", label, Status.PASS, text, power)


def idle_clocks(label: str, gpu: GpuHealth) -> Verdict:
    idle = gpu.idle_clocks
    if isinstance(idle, Missing):
        return _skip("idle-clocks", label, idle)
    busy = idle.get("utilization_pct")
    if busy is not None and busy > BUSY_PCT:
        text = f"was busy ({busy}% utilization) when read, so clocks at idle could not be judged"
        return _verdict("idle-clocks", label, Status.SKIP, text, idle)
    limits = [r for r in idle["reasons"] if r not in BENIGN_REASONS]
    if not limits:
        shown = ", ".join(idle["reasons"]) or "none"
        return _verdict(
            "idle-clocks", label, Status.PASS, f"has no clock limit active at idle (reasons: {shown})", idle
        )
    hardware = [r for r in limits if r in HARDWARE_REASONS]
    status = Status.FAIL if hardware else Status.WARN
    why = (
        "a hardware signal (power supply, overheating or an external brake) holds it down before any work"
        if hardware
        else "it is held down before any work starts"
    )
    return _verdict("idle-clocks", label, status, f"has its clocks limited at idle by {', '.join(limits)}: {why}", idle)


def partition(label: str, gpu: GpuHealth) -> Verdict:
    mode = gpu.partition
    if isinstance(mode, Missing):
        return _skip("partition", label, mode)
    if mode["kind"] == "MIG":
        if mode["current"] != mode["pending"]:
            text = f"has MIG {mode['current']}, {mode['pending']} after the next GPU reset"
            return _verdict("partition", label, Status.WARN, text, mode)
        if mode["current"] == "enabled":
            text = "has MIG on: the GPU is split into instances, and whole-GPU figures do not apply to one"
            return _verdict("partition", label, Status.WARN, text, mode)
        return _verdict("partition", label, Status.PASS, "has MIG off: the whole GPU is one device", mode)
    if mode["current"] != mode["whole"]:
        text = f"is split into compute partitions ({mode['current']}): whole-GPU figures do not apply to one"
        return _verdict("partition", label, Status.WARN, text, mode)
    return _verdict("partition", label, Status.PASS, f"runs as one compute partition ({mode['current']})", mode)


def fabric(label: str, gpu: GpuHealth) -> Verdict:
    state = gpu.fabric
    if isinstance(state, Missing):
        return _skip("fabric", label, state)
    if state["state"] == "completed" and state["status"] == 0:
        return _verdict("fabric", label, Status.PASS, "is registered with the NVSwitch fabric manager", state)
    if state["state"] == "in progress":
        return _verdict("fabric", label, Status.WARN, "is still registering with the NVSwitch fabric manager", state)
    text = (
        f"is not registered with the NVSwitch fabric ({state['state']}, status {state['status']}): work across "
        "GPUs over NVSwitch will fail; is nvidia-fabricmanager running?"
    )
    return _verdict("fabric", label, Status.FAIL, text, state)


def gpu_verdicts(label: str, gpu: GpuHealth, link: dict[str, int] | Missing, under_load: bool) -> Iterator[Verdict]:
    """Every check of one GPU; `link` is the PCIe state to judge (re-read under load where it was low)."""
    yield ecc(label, gpu)
    yield retired_pages(label, gpu)
    yield row_remap(label, gpu)
    yield xid(label, gpu)
    yield pcie(label, link, under_load)
    yield persistence(label, gpu)
    yield power_limit(label, gpu)
    yield idle_clocks(label, gpu)
    yield partition(label, gpu)
    yield fabric(label, gpu)
