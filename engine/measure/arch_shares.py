"""What a figure should reach on a GPU with no entry of its own: the share of its peak that the same figure reached on
a measured model of its architecture (the H200's rigcheck runs, a published MAMF), carried to this GPU's derived peak
with the architecture's declared spread; from another architecture of its class only coarsely (a wider spread, never
a FAIL); from nothing, never: NOT JUDGED, with the reason.

Standard library only: the stage children (their best-of verdicts) and the parent (every figure) both read it.
"""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.measure.arch_peaks import (
    DeviceProps,
    NoPeak,
    Peak,
    arch_entry,
    arch_key,
    family_of,
    load,
    peak,
    specimen_of,
    specimen_props,
)
from rigcheck.engine.measure.board_roofline import roofline
from rigcheck.engine.measure.references import MODELS, REFERENCES, Reference, model_of, reference_for

# The declared spread of a carried share, by figure kind: a figure more than this below it is a WARN.
SPREAD = {"matmul": 0.15, "max-find": 0.15, "device copy": 0.20, "training": 0.30}
LAUNCH_SPREAD = 0.50  # training below this batch is paced by the host's launches: its host CPU differs between siblings
LAUNCH_BATCH = 4096
CROSS_SPREAD = 0.30  # a share carried from another architecture of the class: coarse
CROSS_KINDS = ("matmul", "max-find", "device copy")  # training is never carried across architectures


@dataclass(frozen=True)
class Figure:
    """How a figure's name maps to a kind, the peak it is a share of, and the table names that hold its share."""

    kind: str
    peak_of: str  # a dtype or "memory"
    names: tuple[str, ...]  # entry names to look for, best first
    batch: int | None = None
    channels: int | None = None  # training: its share is of the board network's roofline on the GPU's peaks
    precision: str = ""


@dataclass(frozen=True)
class Expected:
    """What the figure should reach, and on what basis."""

    value: float
    unit: str
    basis: str  # "Hopper share of its derived peak (H200 rigcheck-measured, 3 runs, 80% of its peak)"
    source: str
    spread: float
    derived: bool
    models: tuple[str, ...]  # whose entries the share came from
    share: float
    peak: str  # how the peak was derived
    cross: bool = False  # carried from another architecture: a coarse expectation that never fails a figure

    def reference(self, device_model: str, figure: str) -> Reference:
        """The expectation in the reference table's shape, so the one reference rule judges it."""
        return Reference(
            device_model,
            figure,
            self.value,
            self.unit,
            "expected",
            f"{self.basis}; peak {self.peak}; {self.source}",
            self.basis,
            warn_below=1 - self.spread,
            fail_below=0.0 if self.cross else None,
        )


@dataclass(frozen=True)
class NotExpected:
    reason: str


_MATMUL = re.compile(r"^matmul (fp32|tf32|fp16|bf16|fp8) (\d+)$")
_BEST = re.compile(r"^best-(fp32|tf32|fp16|bf16|fp8)$")
_MAXFIND = re.compile(r"^max-find (fp16|bf16|fp8)(?: \d+x\d+x\d+)?$")
_TRAIN = re.compile(r"^train c(\d+) b(\d+) (fp32|bf16)$")
_COPY = re.compile(r"^device copy( .+)?$")


def classify(name: str) -> Figure | None:
    """The figure's kind and peak; None for a figure no share can hold (a host link, an error, a CPU figure)."""
    if found := _MATMUL.match(name):
        return Figure("matmul", found.group(1), (name,))
    if found := _BEST.match(name):
        return Figure("matmul", found.group(1), (name,))
    if found := _MAXFIND.match(name):
        dtype = found.group(1)
        return Figure("max-find", dtype, (f"max-find {dtype}", f"best-{dtype}"))
    if found := _TRAIN.match(name):
        channels, batch, precision = int(found.group(1)), int(found.group(2)), found.group(3)
        dtype = "bf16" if precision == "bf16" else "tf32"  # cuDNN runs fp32 convolutions as TF32
        return Figure("training", dtype, (name,), batch, channels, precision)
    if _COPY.match(name):
        return Figure("device copy", "memory", (name, "device copy"))
    return None


def model_arch(model: str) -> str | None:
    specimen = specimen_of(model)
    return arch_key(specimen["arch"]) if specimen else None


def model_peak(model: str, what: str, reference: Reference | None = None) -> float | None:
    """A table model's peak: the entry's datasheet peak, else the model's, else derived from its specimen."""
    if reference is not None and reference.peak and reference.peak_of == what:
        return reference.peak
    found = next((m for m in MODELS if m.key == model), None)
    if found is not None and what in found.peaks:
        return found.peaks[what]
    specimen = specimen_of(model)
    derived = peak(specimen_props(specimen), what) if specimen else None
    return derived.value if isinstance(derived, Peak) else None


def _model_top(model: str, fig: Figure, entry: Reference) -> float | None:
    """What the model's entry is a share of: its peak, or for training its roofline on its peaks."""
    compute = model_peak(model, fig.peak_of, entry)
    if fig.kind != "training":
        return compute
    memory = model_peak(model, "memory")
    return roofline(fig.channels or 0, fig.precision, compute, memory) if compute and memory else None


def _entry(model: str, names: tuple[str, ...], references: tuple[Reference, ...]) -> Reference | None:
    for name in names:
        for r in references:
            if r.model == model and r.figure == name and r.kind != "baseline":
                return r
    return None


def _shares(
    models: list[str], fig: Figure, references: tuple[Reference, ...]
) -> tuple[list[tuple[str, float, Reference]], str] | None:
    """(model, share, entry) for the first of the figure's names any of these models holds."""
    for name in fig.names:
        found = []
        for model in models:
            entry = _entry(model, (name,), references)
            top = _model_top(model, fig, entry) if entry else None
            if entry is not None and top:
                found.append((model, entry.value / top, entry))
        if found:
            return found, name
    return None


def _words(found: list[tuple[str, float, Reference]], fig: Figure) -> str:
    if fig.kind == "training":
        return "; ".join(f"{model} {entry.short}: {share:.0%} of its roofline" for model, share, entry in found)
    return "; ".join(f"{model} {entry.short}: {share:.0%} of its peak" for model, share, entry in found)


def _peak(props: DeviceProps, what: str, own_model: str | None) -> Peak | NoPeak:
    """The model's datasheet peak where the table holds one (a listed model), else the derived one."""
    model = next((m for m in MODELS if m.key == own_model), None)
    if model is not None and what in model.peaks:
        family = family_of(props.arch) or "?"
        words = f"the {model.key} datasheet's {model.peaks[what]:,.4g}"
        return Peak(model.peaks[what], what, words, family, model.peak_source)
    return peak(props, what)


def expected(
    figure: str, props: DeviceProps, own_model: str | None = None, references: tuple[Reference, ...] = REFERENCES
) -> Expected | NotExpected:
    """The figure's expectation on this device from its architecture's siblings (never its own model's entries,
    which the caller looks up first), or why there is none."""
    fig = classify(figure)
    if fig is None:
        return NotExpected(f"no share of a peak holds a figure such as {figure!r}")
    entry = arch_entry(props.arch)
    if entry is None:
        return NotExpected(f"no per-unit rates on record for {props.arch or 'an unknown architecture'}")
    top = _peak(props, fig.peak_of, own_model)
    if isinstance(top, NoPeak):
        return NotExpected(f"no {fig.peak_of} peak: {top.reason}")
    if fig.kind == "training":  # samples/s scale with the board network's roofline on this GPU's peaks
        memory = _peak(props, "memory", own_model)
        if isinstance(memory, NoPeak):
            return NotExpected(f"no memory peak for its training roofline: {memory.reason}")
        rate = roofline(fig.channels or 0, fig.precision, top.value, memory.value)
        words = (
            f"a roofline of {fig.peak_of} {top.value:,.1f} TFLOP/s ({top.words}) and memory {memory.value:,.0f} GB/s"
        )
        top = Peak(rate, "training", f"{words} ({memory.words})", top.family, top.source)
    arch, family = arch_key(props.arch), str(entry["family"])
    unit = {"memory": "GB/s"}.get(fig.peak_of, "TFLOP/s") if fig.kind != "training" else "samples/s"
    table_models = sorted({r.model for r in references} - {own_model or ""})
    siblings = [m for m in table_models if model_arch(m) == arch]
    spread = entry.get("spread", {}).get(fig.kind, SPREAD[fig.kind])
    if fig.kind == "training" and fig.batch is not None and fig.batch < LAUNCH_BATCH:
        spread = LAUNCH_SPREAD
    same = _shares(siblings, fig, references)
    if same is not None:
        found, _ = same
        share = statistics.median(s for _, s, _ in found)
        how = "derived" if "derived from" in top.words else "datasheet"
        of = f"{how} {'roofline' if fig.kind == 'training' else 'peak'}"
        basis = f"{family} share of its {of} ({_words(found, fig)})"
        source = " | ".join(sorted({e.source for _, _, e in found}))
        models = tuple(m for m, _, _ in found)
        return Expected(share * top.value, unit, basis, source, spread, True, models, share, top.words)
    if fig.kind not in CROSS_KINDS:
        return NotExpected(
            f"no {family} model has a measured {figure}; a {fig.kind} share is not carried across architectures"
        )
    vendor, klass = entry["vendor"], entry.get("class")
    others = [
        m
        for m in table_models
        if (a := model_arch(m))
        and a != arch
        and (e := arch_entry(a))
        and e["vendor"] == vendor
        and e.get("class") == klass
    ]
    cross = _shares(others, fig, references) if klass == "tensor" else None
    if cross is None:
        why = load()["classes"].get(klass or "", "")
        return NotExpected(
            f"no {family} model, nor another architecture of its class, has a measured {figure}"
            + (f" ({why})" if why else "")
        )
    found, _ = cross
    share = statistics.median(s for _, s, _ in found)
    families = ", ".join(sorted({family_of(model_arch(m) or "") or "?" for m, _, _ in found}))
    basis = f"{families} share carried to {family} (no {family} model measured; coarse: {_words(found, fig)})"
    source = " | ".join(sorted({e.source for _, _, e in found}))
    models = tuple(m for m, _, _ in found)
    return Expected(share * top.value, unit, basis, source, CROSS_SPREAD, True, models, share, top.words, cross=True)


def own_reference(model: str, figure: str, references: tuple[Reference, ...] = REFERENCES) -> Reference | None:
    """The model's own entry for any of the figure's names (a max-find shape: its max-find, else its best-of)."""
    fig = classify(figure)
    return _entry(model, fig.names, references) if fig is not None else None


LEAVE_OUT = "RIGCHECK_LEAVE_OUT"  # model keys whose own entries a live run leaves out (bench/arch_check.py)


def left_out() -> frozenset[str]:
    """The models a run is told to treat as unlisted: leave-one-out on a live GPU (never set in normal use)."""
    return frozenset(k.strip() for k in os.environ.get(LEAVE_OUT, "").split(",") if k.strip())


def lookup(
    device_name: str, figure: str, props: DeviceProps | None = None, baseline: dict[str, Any] | None = None
) -> Reference | str:
    """What a figure on this device is judged against: the baseline's figure, its model's own entry (for any of
    the figure's names), else its architecture's carried share in a reference's shape; else why there is none."""
    units, arch = (props.units, props.arch) if props else (None, None)
    model = model_of(device_name, units, arch)
    leave = left_out()
    if model is not None and model.key in leave:  # judged as if the table did not list it
        found = reference_for(device_name, figure, baseline, units, arch) if baseline else None
        found = found if found is not None and found.kind == "baseline" else None
        model = None
    else:
        found = reference_for(device_name, figure, baseline, units, arch)
        if found is None and model is not None:
            found = own_reference(model.key, figure)
    if found is not None:
        return found
    if props is None:
        return f"no entry for {device_name}, and its stage recorded no architecture, SMs and clocks to derive one"
    pool = tuple(r for r in REFERENCES if r.model not in leave) if leave else REFERENCES
    carried = expected(figure, props, model.key if model else None, pool)
    if isinstance(carried, NotExpected):
        return carried.reason
    return carried.reference(model.key if model else device_name, figure)
