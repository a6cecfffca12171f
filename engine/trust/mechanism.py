"""The parent's reading of what a figure actually ran with (recorded by engine/stages/common/mechanism.py in the
child): a CPU figure on fewer threads than the CPUs it may use, named by what set them; a GPU matrix multiply
whose rate shows another math mode than its dtype's (tf32 at fp32's rate, fp32 at TF32's), named by the flag or
variable behind it. A setting of the table (engine/facts/settings.py) is named as a figure's cause only where
the figure is off its expectation in the direction the setting explains: one that changed no figure is a note.

Each reading returns (text, next step) or None; engine/trust/cause.py makes it the figure's one cause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.settings import READ_BY_MECHANISM, InForce

OFF = 0.1  # a figure more than this share from its expectation is off it
TF32_AT_FP32 = 1.2  # a tf32 figure at or below this multiple of fp32's peak did not run as TF32
FP32_AS_TF32 = 1.1  # an fp32 figure above this multiple of fp32's peak ran as something faster
Found = tuple[str, str]


def off(value: float, expected: float | None, slows: bool) -> bool:
    """Whether `value` is off `expected` in the direction a setting explains (below for one that slows, above for
    one that makes the figure other work); False where there is no expectation to be off."""
    if not expected:
        return False
    ratio = value / expected
    return ratio < 1 - OFF if slows else ratio > 1 + OFF


def _setter_words(set_by: list[str], pool: str, threads: int, ceiling: int) -> Found:
    if not set_by:
        return (
            f"something in this interpreter set {pool}'s threads to {threads}",
            "look for a call to torch.set_num_threads (or threadpoolctl's threadpool_limits) in what this "
            "interpreter runs at start, and run again without it",
        )
    first = set_by[0]
    if "=" in first and " in " not in first:
        name = first.split("=", 1)[0]
        return f"{first} set them", f"unset {name}, or set it to {ceiling}, and run again"
    return f"set by {first}", f"remove that call ({first}), or run with `python -s`, and run again"


def threads(figure: Measurement, expected: float | None) -> Found | None:
    """A CPU figure on fewer threads than the CPUs it may use, where it is below its expectation (or has none)."""
    mech = figure.params.get("mechanism")
    if not isinstance(mech, Mapping):
        return None
    count, ceiling = mech.get("threads"), mech.get("ceiling")
    if not count or not ceiling or count >= ceiling:
        return None
    if expected and not off(figure.value, expected, slows=True):
        return None
    pool = str(mech.get("pool") or "torch")
    setter, step = _setter_words(list(mech.get("set_by") or []), pool, int(count), int(ceiling))
    quota = f" within a quota of {mech['quota_cpus']:g}" if mech.get("quota_cpus") else ""
    text = f"the thread count: it ran on {count} thread(s) of {pool} where it may use {ceiling} CPU(s){quota}; {setter}"
    return text, step


def _math_flags(mode: Mapping[str, Any], on: bool) -> list[str]:
    """What in the math mode made TF32 on (`on`) or kept it off, in words."""
    found = [f"{k}={v}" for k, v in (mode.get("variables") or {}).items() if (str(v).strip() != "0") == on]
    if on and mode.get("allow_tf32"):
        found.append("torch.backends.cuda.matmul.allow_tf32 was True")
    if on and mode.get("float32_matmul_precision") not in (None, "highest"):
        found.append(f"torch's float32 matmul precision was {mode['float32_matmul_precision']!r}")
    if not on and mode.get("allow_tf32") is False:
        found.append("torch.backends.cuda.matmul.allow_tf32 was False")
    return found


def math_mode(figure: Measurement) -> Found | None:
    """A GPU matrix multiply whose rate shows another math mode than its dtype's, read against fp32's peak."""
    mode = figure.params.get("math_mode")
    if not isinstance(mode, Mapping) or not mode.get("fp32_peak"):
        return None
    dtype, peak, value = figure.params.get("dtype"), float(mode["fp32_peak"]), figure.value
    if dtype == "tf32" and value <= TF32_AT_FP32 * peak:
        why = _math_flags(mode, on=False) or ["cuBLAS did not use TF32 though torch asked for it"]
        text = f"tf32 ran at the fp32 rate ({value:.4g} {figure.unit}, fp32's peak {peak:g}): {'; '.join(why)}"
        return text, "unset NVIDIA_TF32_OVERRIDE (or leave torch's TF32 flags on) and run again"
    if dtype == "fp32" and value > FP32_AS_TF32 * peak:
        why = _math_flags(mode, on=True) or ["something in this interpreter turned TF32 on"]
        text = f"fp32 ran as TF32 ({value:.4g} {figure.unit}, above fp32's peak {peak:g}): {'; '.join(why)}"
        return text, "unset the TF32 overrides (NVIDIA_TF32_OVERRIDE, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) and run again"
    return None


def read(figure: Measurement, expected: float | None) -> Found | None:
    """What the figure ran with that explains it: its thread count, else its math mode."""
    return threads(figure, expected) or math_mode(figure)


def named_settings(settings: Iterable[InForce], figure: Measurement, expected: float | None) -> list[InForce]:
    """The settings in force to name as this figure's cause: those the figure is off its expectation in the
    direction of, leaving out the ones its recorded mechanism already read (its threads, its math mode)."""
    read_here = READ_BY_MECHANISM if ("mechanism" in figure.params or "math_mode" in figure.params) else ()
    return [s for s in settings if s.name not in read_here and off(figure.value, expected, s.slows)]
