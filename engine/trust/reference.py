"""After a stage: each GPU figure against what its model achieves (engine/measure/references.py) or against the
user's own baseline, so that a lone slow GPU is named before any peer or earlier run exists to compare it with.

Standard library only: the parent runs it on the annotated figures; no torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.measure.references import (
    FAIL_BELOW,
    MODELS,
    WARN_BELOW,
    Reference,
    grade,
    model_of,
    reference_for,
)

THERMAL = ("software thermal slowdown", "hardware thermal slowdown")
POWER_FAULTS = ("hardware slowdown", "power brake")
# The first command to run, by vendor and by what the conditions point at.
LOOK = {
    "nvidia": {
        "clocks": "`nvidia-smi -q -d PERFORMANCE,POWER,CLOCK`",
        "thermal": "`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`",
        "power": "`nvidia-smi -q -d PERFORMANCE,POWER`",
        "memory": "`nvidia-smi -q -d CLOCK`",
    },
    "amd": {
        "clocks": "`rocm-smi --showclocks --showpower --showperflevel`",
        "thermal": "`rocm-smi --showtemp --showperflevel`",
        "power": "`rocm-smi --showpower --showperflevel`",
        "memory": "`rocm-smi --showclocks`",
    },
}


def vendor_of(name: str) -> str:
    """Which vendor's tools the next step names: the known model's, else the name's own word."""
    model = next((m for m in MODELS if m.key == name), None) or model_of(name)
    if model is not None:
        return model.vendor
    return "amd" if re.search(r"\b(AMD|Radeon|Instinct)\b", name, re.IGNORECASE) else "nvidia"


def device_model(m: Measurement) -> str | None:
    """The device's name as telemetry (or the stage itself) saw it; None for a CPU figure or where unknown."""
    if not m.device.startswith("cuda"):
        return None
    name = (m.conditions or {}).get("gpu_name") or m.params.get("gpu_name") or m.params.get("device_name")
    return str(name) if name else None


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    return next((data[k] for k in keys if data.get(k) is not None), None)


def pcie_link(m: Measurement) -> dict[str, Any]:
    """The link's current and top generation and width, where the figure's conditions or params hold them
    (flat, or as the health stage's {gen, max_gen, width, max_width})."""
    c, p = m.conditions or {}, m.params
    nested = [d["pcie"] for d in (p, c) if isinstance(d.get("pcie"), dict)]
    both = {**p, **c, **(nested[-1] if nested else {})}
    return {
        "gen": _first(both, "gen", "pcie_gen", "pcie_link_gen"),
        "max_gen": _first(both, "max_gen", "pcie_max_gen", "pcie_link_max_gen"),
        "width": _first(both, "width", "pcie_width", "pcie_link_width"),
        "max_width": _first(both, "max_width", "pcie_max_width", "pcie_link_max_width"),
    }


def _outside(c: Mapping[str, Any]) -> tuple[str, str] | None:
    """Something outside the GPU took its share: another process on it, or on the CPUs the figure needed."""
    others = c.get("other_gpu_processes") or []
    if others:
        named = ", ".join(f"{o.get('name', '?')} (pid {o.get('pid')})" for o in others[:3])
        return f"{len(others)} other process(es) on the GPU: {named}", f"stop pid {others[0].get('pid')} and run again"
    reasons = list(c.get("trust_reasons") or [])
    if any("CPUs busy" in r for r in reasons):
        return "; ".join(reasons), "stop the processes named, or run again with `--wait-quiet 120`"
    return None


def _held_back(c: Mapping[str, Any], look: Mapping[str, str], vendor: str) -> tuple[str, str] | None:
    """Heat, a power fault or a lowered power limit held the board back."""
    throttle = [r for r in c.get("throttle", []) if r != "idle"]
    if any(r in throttle for r in THERMAL):
        hot = f" at {c['temperature_max_c']:.0f} C" if c.get("temperature_max_c") else ""
        return f"thermal slowdown{hot}", f"{look['thermal']}; check the fans and airflow"
    if any(r in throttle for r in POWER_FAULTS):
        named = ", ".join(r for r in throttle if r in POWER_FAULTS)
        return f"clocks held back by {named}", f"{look['power']}; check the board's power cables and supply"
    limit, default = c.get("power_limit_w"), _first(c, "power_default_limit_w", "power_limit_default_w")
    if limit and default and limit < 0.98 * default:
        fix = f"restore it: `nvidia-smi -pl {default:.0f}`" if vendor == "nvidia" else "restore the default power cap"
        return f"power limit lowered to {limit:.0f} of its default {default:.0f} W", fix
    return None


def _link(m: Measurement) -> tuple[str, str]:
    """A host-link figure: the link below its top generation or width, else where to look at it."""
    c, p, link = m.conditions or {}, m.params, pcie_link(m)
    if all(link.values()) and (link["gen"], link["width"]) != (link["max_gen"], link["max_width"]):
        now, top = f"Gen{link['gen']} x{link['width']}", f"Gen{link['max_gen']} x{link['max_width']}"
        return f"PCIe at {now} of {top}", f"reseat or check the riser: PCIe at {now} of {top}"
    bus = c.get("gpu_pci_bus_id") or p.get("pci_bus_id") or "BUS"
    basis = f" ({p['limit_basis']})" if p.get("limit_basis") else ""
    return f"the host link{basis}", f"`lspci -vv -s {bus} | grep -i lnksta` for its generation and width"


def cause_and_next(m: Measurement, vendor: str = "nvidia") -> tuple[str, str]:
    """The likely cause of a slow figure, from its own conditions, and the next thing to run or change."""
    c, p = m.conditions or {}, m.params
    look = LOOK.get(vendor, LOOK["nvidia"])
    found = _outside(c) or _held_back(c, look, vendor)
    if found:
        return found
    if p.get("bound") == "link":
        return _link(m)
    ratio, mem = c.get("clock_ratio"), c.get("mem_clock_ratio")
    if ratio is not None and ratio < 0.9 and p.get("bound", "compute") == "compute":
        why = ", ".join(r for r in c.get("throttle", []) if r != "idle") or "no throttle reason reported"
        return f"SM clock at {ratio:.0%} of max ({why})", look["clocks"]
    if mem is not None and mem < 0.9 and p.get("bound") == "memory":
        return f"memory clock at {mem:.0%} of max", look["memory"]
    if c.get("trust_reasons"):
        return "; ".join(c["trust_reasons"]), "run it again on a quiet host (`--wait-quiet 120`)"
    if not c.get("samples"):
        return "no telemetry covers it", "run again with telemetry on to see its clocks and power"
    return (
        "nothing in its conditions (clocks, power and load were normal): likely the software stack",
        "compare `rigcheck run probe`'s torch and CUDA with the reference's",
    )


def reference_verdict(m: Measurement, reference: Reference | None, stage: str | None = None) -> Verdict | None:
    """The rule, for one figure and its model's reference: FAIL below half, WARN more than 15% below, else PASS.
    None where there is no reference or the figure is no result. A FAIL is a WARN where the figure was
    disturbed (SUSPECT): the cause is then outside the GPU."""
    if reference is None or m.params.get("broken") or m.params.get("launch_bound") or m.value <= 0:
        return None
    if reference.unit and m.unit and reference.unit != m.unit:
        return None
    status, share = grade(m.value, reference)
    where = m.device or "?"
    head = f"{where} {m.name} {m.value:,.4g} {m.unit}, {share:.0%} of {reference.cite()}"
    numbers = {
        "device": where,
        "value": m.value,
        "reference": reference.value,
        "share": round(share, 4),
        "model": reference.model,
        "kind": reference.kind,
        "source": reference.source,
    }
    if status == Status.PASS:
        return Verdict(stage or m.stage, f"reference {m.name}", status, head, numbers, 1 - WARN_BELOW, where)
    cause, step = cause_and_next(m, vendor_of(device_model(m) or reference.model))
    trust = (m.conditions or {}).get("trust")
    if status == Status.FAIL and trust == "SUSPECT":
        status, rule = Status.WARN, f"below half, but the figure was disturbed ({trust})"
    else:
        rule = "below half of it" if status == Status.FAIL else f"more than {1 - WARN_BELOW:.0%} below it"
    return Verdict(
        stage or m.stage,
        f"reference {m.name}",
        status,
        f"{head}: {rule}; likely cause: {cause}; next: {step}",
        numbers | {"cause": cause, "next": step},
        1 - WARN_BELOW,
        where,
    )


def reference_verdicts(
    figures: Iterable[Measurement], stage: str, baseline: dict[str, Any] | None = None
) -> Iterator[Verdict]:
    """A WARN or FAIL for each GPU figure too far below its model's reference (or the baseline's), then one PASS
    saying what was compared where none was. Nothing at all where no figure has a reference."""
    judged: list[Verdict] = []
    for m in figures:
        name = device_model(m)
        if name is None:
            continue
        verdict = reference_verdict(m, reference_for(name, m.name, baseline), stage)
        if verdict is not None:
            judged.append(verdict)
    if not judged:
        return
    slow = [v for v in judged if v.status != Status.PASS]
    yield from slow
    if not slow:
        against = "the baseline's" if all(v.numbers["kind"] == "baseline" for v in judged) else "their model's"
        models = ", ".join(sorted({str(v.numbers["model"]) for v in judged}))
        yield Verdict(
            stage,
            "reference",
            Status.PASS,
            f"{len(judged)} figure(s) within {1 - WARN_BELOW:.0%} of {against} reference figures ({models}); "
            f"below {FAIL_BELOW:.0%} of one would be a FAIL",
            {"compared": len(judged), "models": models},
            tolerance=1 - WARN_BELOW,
        )
