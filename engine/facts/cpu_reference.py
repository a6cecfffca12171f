"""Which reference, if any, the table keeps for a CPU figure on this host's CPU: chosen by what the CPU can do (its
vendor and widest FMA unit, "Intel AVX-512"), since the share of cores x clock x FLOP/cycle a CPU reaches is a
property of its vector units and BLAS, not of its brand string (the GPU hosts and the 2-core VMs here both report
"Intel(R) Xeon(R) Processor", with different units). The stage words its best figure by it, and the parent's
expectations judge by it (below both, so neither imports the other)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.references import MODELS, Model, Reference, model_of, references_of

# The widest fp32 FMA unit a flag names, widest first, with its FLOP/cycle (as measure/plausibility.py counts it).
UNITS = (("avx512f", "AVX-512"), ("fma", "AVX2+FMA"), ("avx2", "AVX2"), ("asimd", "NEON"))


def cpu_capability(model_name: str, flags: Iterable[str], machine: str = "x86_64") -> str:
    """'Intel AVX-512', 'AMD AVX2+FMA', 'Arm NEON': the vendor (whose cores split or fuse wide units differently:
    Zen 4 runs AVX-512 as two 256-bit halves) and the widest FMA unit."""
    have = set(flags)
    unit = next((name for flag, name in UNITS if flag in have), "NEON" if machine == "aarch64" else "SSE")
    lowered = model_name.lower()
    vendor = "Intel" if "intel" in lowered else "AMD" if "amd" in lowered else "Arm" if machine == "aarch64" else "x86"
    return f"{vendor} {unit}"


@functools.cache
def this_cpu() -> str:
    """The host's CPU model name, as /proc/cpuinfo gives it."""
    return str(cpu_facts().get("model") or "")


@functools.cache
def this_capability() -> str:
    facts = cpu_facts()
    return cpu_capability(str(facts.get("model") or ""), facts.get("flags") or [], str(facts.get("machine") or ""))


def cpu_model(cpu_name: str, capability: str | None = None) -> Model | None:
    """The table's CPU model for this CPU: one measured on the same capability; a model that declares none is
    matched by its brand (an entry pasted before capabilities were recorded)."""
    capability = capability if capability is not None else this_capability()
    found = next((m for m in MODELS if m.vendor == "cpu" and m.capability and m.capability == capability), None)
    if found is not None:
        return found
    named = model_of(cpu_name, cpu=True)
    return named if named is not None and not named.capability else None


def cpu_reference(m: Measurement, cpu_name: str, capability: str | None = None) -> Reference | None:
    """The table's entry for this figure on a CPU of this capability; None for a GPU figure or a CPU whose
    capability no measured CPU shares."""
    if m.device != "cpu" or m.unit not in ("GFLOP/s", "samples/s"):
        return None
    model = cpu_model(cpu_name, capability)
    if model is None:
        return None
    return next((r for r in references_of(model.key) if r.figure == m.name and r.peak), None)
