"""One cause per figure: the one function that says why a figure is where it is and what to do next.

Every verdict that speaks of a figure (best-of, reference, peers, history, baseline, fleet) quotes
`likely_cause`, so one run never gives two causes for one figure.

    likely_cause(figure, expectation=None, settings=None) -> Cause

- `figure`: the annotated Measurement; its conditions are read through `Conditions.from_dict`.
- `expectation`: what the figure was judged against, where there is something: `Expectation(value, source, kind)`,
  the expected value in the figure's unit, the words that name it with its source ("the H200's published MAMF
  794.5 TFLOP/s (stas00/ml-engineering ...)"), and its kind ("reference", "baseline", "peers", "history", or a
  new one). A verdict on bandwidth, training, the CPU or the host link passes its own the same way.
- `settings`: the settings in force that change this figure (engine/facts/settings.py); by default those its
  conditions carry.

The causes, first found first: the figure is no result (broken); someone else's load (other processes on the GPU
or its CPUs, named; never the hardware's fault); the board held back (heat, a power fault, a lowered power
limit); a setting in force that changes this figure (ahead of "the software stack"); the host link; a low clock;
other trust reasons; no telemetry; and else nothing in its conditions. `Cause.judges_hardware` is False for a
cause outside the hardware measured: a verdict on such a figure is INCONCLUSIVE, never FAIL or PASS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.facts.settings import InForce
from rigcheck.engine.hw.throttle import POWER_FAULTS, THERMAL_REASONS
from rigcheck.engine.measure.references import MODELS, model_of
from rigcheck.engine.trust import mechanism
from rigcheck.engine.trust.judgement import GPU_PROCESSES, Judgement
from rigcheck.engine.trust.view import Conditions

THERMAL = THERMAL_REASONS  # the one table of what each throttle reason means: hw/throttle.py
NOTHING = "nothing in its conditions (clocks, power, load and settings were normal): likely the software stack"
NOTHING_NEXT = "compare `rigcheck run probe`'s torch and CUDA with a healthy host's or the reference's"
NOT_HARDWARE = ("broken", "outside", "setting")  # causes that say nothing about the hardware measured
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


@dataclass(frozen=True)
class Expectation:
    """What a figure is judged against: the expected value (the figure's unit), its source in words, its kind."""

    value: float
    source: str
    kind: str = "reference"


@dataclass(frozen=True)
class Cause:
    """A figure's likely cause and the next thing to run or change; `kind` says which rule found it."""

    text: str
    next_step: str
    kind: str
    settings: tuple[str, ...] = ()  # the names of the settings in force it names (engine/facts/settings.py)

    def numbers(self) -> dict[str, Any]:
        """What a verdict keeps of it: its words, next step and kind, and the settings it names where any."""
        kept: dict[str, Any] = {"cause": self.text, "next": self.next_step, "cause_kind": self.kind}
        return kept | ({"cause_settings": list(self.settings)} if self.settings else {})

    @property
    def judges_hardware(self) -> bool:
        """False where the cause lies outside the hardware measured: the figure cannot judge that hardware."""
        return self.kind not in NOT_HARDWARE

    def unjudgeable(self, graded: Status) -> bool:
        """Whether a verdict graded `graded` on this figure must be INCONCLUSIVE: where someone else's load or a
        setting could explain a figure below expectation (never a FAIL), and always where the figure is broken.
        Someone else's load only lowers a figure: a disturbed figure that still meets its expectation passes,
        the disturbance named, as a figure that passes with a setting in force does (issue 43)."""
        if self.kind in ("setting", "outside"):
            return graded != Status.PASS
        return not self.judges_hardware

    def words(self) -> str:
        return f"likely cause: {self.text}; next: {self.next_step}"

    def unjudged_words(self) -> str:
        return f"could not be judged: {self.text}; next: {self.next_step}"


def vendor_of(name: str | None, conditions: Conditions | None = None) -> str:
    """Which vendor's tools the next step names: the telemetry's, the known model's, else the name's own word."""
    if conditions is not None and conditions.gpu_vendor:
        return "amd" if conditions.gpu_vendor.upper() == "AMD" else "nvidia"
    name = name or ""
    model = next((m for m in MODELS if m.key == name), None) or model_of(name)
    if model is not None:
        return model.vendor
    return "amd" if re.search(r"\b(AMD|Radeon|Instinct)\b", name, re.IGNORECASE) else "nvidia"


def split_reason(reason: str) -> tuple[str, str]:
    """A trust reason's text and its own next step ("...; next: ..."), or a general one."""
    text, _, step = reason.partition("; next: ")
    return text, step or "run it again on a quiet host (`--wait-quiet 120`)"


def _outside(c: Conditions) -> Cause | None:
    """Someone else's load on the GPU or on the CPUs the figure needed: never the hardware's fault."""
    # the GPU's other processes are the cause only where trust blamed them (one that only holds memory is not)
    blamed = c.trust is None or (c.disturbed and any(r.kind == GPU_PROCESSES for r in c.outside))
    if c.other_gpu_processes and blamed:
        named = ", ".join(f"{o.get('name', '?')} (pid {o.get('pid')})" for o in c.other_gpu_processes[:3])
        first = c.other_gpu_processes[0].get("pid")
        return Cause(
            f"{len(c.other_gpu_processes)} other process(es) on the GPU: {named}",
            f"stop pid {first} and run again",
            "outside",
        )
    if c.disturbed:
        texts, steps = zip(*(split_reason(r) for r in c.outside), strict=True)
        return Cause("; ".join(texts), steps[0], "outside")
    return None


def _held_back(c: Conditions, look: dict[str, str], vendor: str) -> Cause | None:
    """Heat, a power fault or a lowered power limit held the board back."""
    throttle = c.active_throttle
    if any(r in throttle for r in THERMAL):
        hot = f" at {c.temperature_max_c:.0f} C" if c.temperature_max_c else ""
        return Cause(f"thermal slowdown{hot}", f"{look['thermal']}; check the fans and airflow", "held")
    if any(r in throttle for r in POWER_FAULTS):
        named = ", ".join(r for r in throttle if r in POWER_FAULTS)
        return Cause(
            f"clocks held back by {named}", f"{look['power']}; check the board's power cables and supply", "held"
        )
    limit, default = c.power_limit_w, c.power_default_limit_w
    if limit and default and limit < 0.98 * default:
        fix = f"restore it: `nvidia-smi -pl {default:.0f}`" if vendor == "nvidia" else "restore the default power cap"
        return Cause(f"power limit lowered to {limit:.0f} of its default {default:.0f} W", fix, "held")
    return None


def _setting(settings: Iterable[InForce], figure: Measurement, expectation: Expectation | None) -> Cause | None:
    """What the figure ran with that explains it (its threads, its math mode: engine/trust/mechanism.py), else a
    setting in force that it is off its expectation in the direction of: one that slows it where the figure is
    low, one that makes it other work where it is high. A setting that changed no figure is not its cause."""
    expected = expectation.value if expectation is not None else None
    read = mechanism.read(figure, expected)
    if read:
        return Cause(read[0], read[1], "setting")
    chosen = mechanism.named_settings(settings, figure, expected)
    if not chosen:
        return None
    text = "; ".join(f"{s.name}={s.value} is set: {s.effect}" for s in chosen)
    return Cause(text, chosen[0].next_step, "setting", tuple(s.name for s in chosen))


def pcie_link(figure: Measurement) -> dict[str, Any]:
    """The link's current and top generation and width, where the figure's conditions or params hold them
    (flat, or as the health stage's {gen, max_gen, width, max_width}); None for each one unknown."""
    c, p = figure.conditions or {}, figure.params
    nested = [d["pcie"] for d in (p, c) if isinstance(d.get("pcie"), dict)]
    both = {**p, **c, **(nested[-1] if nested else {})}

    def first(*keys: str) -> Any:
        return next((both[k] for k in keys if both.get(k) is not None), None)

    return {
        "gen": first("gen", "pcie_gen", "pcie_link_gen"),
        "max_gen": first("max_gen", "pcie_max_gen", "pcie_link_max_gen"),
        "width": first("width", "pcie_width", "pcie_link_width"),
        "max_width": first("max_width", "pcie_max_width", "pcie_link_max_width"),
    }


def _link(figure: Measurement, c: Conditions) -> Cause:
    """A host-link figure: the link below its top generation or width, else where to look at it."""
    link = pcie_link(figure)
    gen, top_gen, width, top_width = link["gen"], link["max_gen"], link["width"], link["max_width"]
    if all((gen, top_gen, width, top_width)) and (gen < top_gen or width < top_width):  # (a read above it: odd)
        now, top = f"Gen{gen} x{width}", f"Gen{top_gen} x{top_width}"
        return Cause(f"PCIe at {now} of {top}", f"reseat or check the riser: PCIe at {now} of {top}", "link")
    bus = c.gpu_pci_bus_id or figure.params.get("pci_bus_id") or "BUS"
    basis = f" ({figure.params['limit_basis']})" if figure.params.get("limit_basis") else ""
    return Cause(f"the host link{basis}", f"`lspci -vv -s {bus} | grep -i lnksta` for its generation and width", "link")


def likely_cause(
    figure: Measurement,
    expectation: Expectation | None = None,
    settings: Iterable[InForce] | None = None,
    judgement: Judgement | None = None,
) -> Cause:
    """The figure's likely cause and next step (see the module's docstring for the order). `judgement`: the figure's
    judgement with its structured reasons (by default the one its conditions hold); the rules read each reason's
    kind and whether it lies outside the hardware, never its words."""
    c = Conditions.from_dict(figure.conditions)
    if judgement is not None:
        c = replace(c, trust=judgement.trust, trust_reasons=tuple(judgement.reasons), outside=tuple(judgement.outside))
        c = replace(c, judgement=judgement)
    p = figure.params
    if p.get("broken"):
        return Cause(str(p["broken"]), str(p.get("broken_next") or "run it again"), "broken")
    name = c.gpu_name or p.get("gpu_name") or p.get("device_name")
    vendor = vendor_of(str(name) if name else None, c)
    look = LOOK.get(vendor, LOOK["nvidia"])
    found = (
        _outside(c)
        or _held_back(c, look, vendor)
        or _setting(c.settings if settings is None else settings, figure, expectation)
    )
    if found:
        return found
    bound = p.get("bound", "compute")
    if bound == "link":
        return _link(figure, c)
    if c.clock_ratio is not None and c.clock_ratio < 0.9 and bound == "compute":
        why = ", ".join(c.active_throttle) or "no throttle reason reported"
        return Cause(f"SM clock at {c.clock_ratio:.0%} of max ({why})", look["clocks"], "clocks")
    if c.mem_clock_ratio is not None and c.mem_clock_ratio < 0.9 and bound == "memory":
        return Cause(f"memory clock at {c.mem_clock_ratio:.0%} of max", look["memory"], "clocks")
    if c.trust_reasons:
        texts, steps = zip(*(split_reason(r) for r in c.trust_reasons), strict=True)
        return Cause("; ".join(texts), steps[0], "trust")
    if not c.samples:
        return Cause("no telemetry covers it", "run again with telemetry on to see its clocks and power", "unjudged")
    return Cause(NOTHING, NOTHING_NEXT, "nothing")
