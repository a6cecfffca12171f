"""What each known GPU model achieves, figure by figure, each with its source: what a lone GPU is judged against.

The table itself is data (references.json beside this module, shipped in the wheel); this module is its one
loader and its lookups. Standard library only: the matmul stage child (its best-of verdicts) and the parent
(every figure after a stage) both read it. A user's own baseline (`--baseline FILE`, made by `rigcheck export
RUN --format baseline`) takes the table's place for every figure it names.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigcheck.engine.events import Status
from rigcheck.engine.measure.board_roofline import figure_flops
from rigcheck.engine.measure.table_file import BrokenTable, positive, read_json

WARN_BELOW = 0.85  # a figure more than 15% below its model's reference is a WARN (unless its entry says otherwise)
FAIL_BELOW = 0.50  # below half of it, a FAIL
TABLE = Path(__file__).with_name("references.json")


@dataclass(frozen=True)
class Model:
    """A GPU model as its device name shows it; `sms` tells apart variants that share a name's words."""

    key: str  # how a verdict names it: "the H200's ..."
    pattern: str  # searched, ignoring case, in the device name (and its architecture, where the caller knows it)
    vendor: str  # "nvidia" or "amd": which tool the next step names
    sms: int | None = None
    pci_ids: tuple[str, ...] = ()  # PCI device ids ("0x2335"), lower case
    names: tuple[str, ...] = ()  # the names its driver reports
    peaks: dict[str, float] = field(
        default_factory=dict, compare=False
    )  # datasheet: dtype TFLOP/s, memory/host_link GB/s
    peak_source: str = ""
    capability: str = ""  # a CPU's vector units ("Intel AVX-512"): what its share is a property of, not its brand


@dataclass(frozen=True)
class Reference:
    """One figure a model achieves, in the figure's own unit, and where that number comes from."""

    model: str
    figure: str  # a measurement's name ("matmul bf16 8192"), "best-<dtype>", or a name's stem for any size
    value: float
    unit: str
    kind: str  # how a verdict cites it: "published MAMF", "published", "rigcheck-measured", "baseline"
    source: str  # the full citation: table, commit or page; or date, torch, driver and runs
    short: str = ""  # the source in a few words: "published MAMF, ml-engineering"
    figure_kind: str = ""  # "matmul", "device copy", "host link", "training"
    size: str = ""  # "8192", "4 GiB", "c128 b8192", "best", or "any" (a stem that matches every size)
    peak: float | None = None  # the datasheet peak it is a share of, in the same unit
    peak_of: str = ""  # which of the model's peaks
    warn_below: float = WARN_BELOW
    note: str = ""  # what this entry alone needs said ("the lower of two runs")
    fail_below: float | None = None  # None: FAIL_BELOW; 0.0 for a coarse expectation that never fails a figure

    def cite(self) -> str:
        """'the H200's published MAMF 794.5 (ml-engineering)', 'the baseline's 790.9 for NVIDIA H200',
        'the 811.6 expected (Hopper share of the derived peak (...))'."""
        if self.kind == "baseline":
            return f"the baseline's {self.value:,.4g} for {self.model}"
        if self.kind == "expected":
            return f"the {self.value:,.4g} expected ({self.short})"
        where = self.short.removeprefix(self.kind).strip(" ,")
        return f"the {self.model}'s {self.kind} {self.value:,.4g}" + (f" ({where})" if where else "")


def source_text(source: dict[str, Any], note: str = "") -> str:
    parts = [str(source["cite"])]
    for key in ("commit", "page", "date", "torch", "driver"):
        if source.get(key):
            parts.append(f"{key} {source[key]}")
    if source.get("runs"):
        parts.append(f"{source['runs']} run(s)")
    return "; ".join(parts + ([note] if note else []))


@functools.cache
def load(path: Path = TABLE) -> tuple[tuple[Model, ...], tuple[Reference, ...], dict[str, dict[str, Any]]]:
    """The models, the references and the sources the data file holds; BrokenTable (one line naming the file)
    where it is not a table: not JSON, a key missing, a number not finite and above 0, an entry out of its range."""
    data = read_json(path)
    try:
        models, references, sources = _entries(data)
        problems = [problem for reference in references for problem in entry_problems(reference, models)]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        said = f"no {error.args[0]!r}" if isinstance(error, KeyError) else " ".join(str(error).split())[:200]
        raise BrokenTable(f"the reference table {path} is damaged: {said}") from None
    if problems:
        raise BrokenTable(f"the reference table {path} is damaged: {problems[0]}")
    return models, references, sources


def _entries(data: Any) -> tuple[tuple[Model, ...], tuple[Reference, ...], dict[str, dict[str, Any]]]:
    sources: dict[str, dict[str, Any]] = data["sources"]
    models = tuple(
        Model(
            m["key"],
            m["pattern"],
            m["vendor"],
            m.get("sms"),
            tuple(i.lower() for i in m.get("pci_ids", [])),
            tuple(m.get("names", [])),
            {k: positive(v, f"{m['key']}'s {k} peak") for k, v in m.get("peaks", {}).items()},
            m.get("peak_source", ""),
            m.get("capability", ""),
        )
        for m in data["models"]
    )
    references = []
    for r in data["references"]:
        where = f"{r['model']} {r['figure']}"
        if r["source"] not in sources:
            raise ValueError(f"{where}: no source {r['source']!r}")
        source = sources[r["source"]]
        peak = r.get("peak")
        warn_below = positive(r.get("warn_below", WARN_BELOW), f"{where}'s warn_below")
        if warn_below > 1:
            raise ValueError(f"{where}'s warn_below {warn_below:g} is not between 0 and 1")
        references.append(
            Reference(
                r["model"],
                r["figure"],
                positive(r["value"], f"{where}'s value"),
                r["unit"],
                source["kind"],
                source_text(source),
                source["short"],
                r.get("kind", ""),
                r.get("size", ""),
                None if peak is None else positive(peak, f"{where}'s peak"),
                r.get("peak_of", ""),
                warn_below,
                r.get("note", ""),
            )
        )
    return models, tuple(references), sources


# max-find's mean is judged against the same figure as the sweep's best of a dtype
ALIASES = {"max-find bf16": "best-bf16", "max-find fp8": "best-fp8"}


def model_of(
    device_name: str, sms: int | None = None, arch: str | None = None, pci_id: str | None = None, cpu: bool = False
) -> Model | None:
    """The known model a device (torch's or NVML's name, or its PCI device id; with `cpu`, the CPU's model name
    from /proc/cpuinfo) belongs to, or None."""
    kinds = [m for m in MODELS if (m.vendor == "cpu") == cpu]
    if pci_id:
        wanted = pci_id.lower() if pci_id.lower().startswith("0x") else f"0x{pci_id.lower()}"
        found = [m for m in kinds if wanted in m.pci_ids and (m.sms is None or sms is None or sms == m.sms)]
        if found:
            return found[0]
    text = f"{device_name} {arch or ''}"
    for model in kinds:
        if re.search(model.pattern, text, re.IGNORECASE) and (model.sms is None or sms is None or sms == model.sms):
            return model
    return None


def references_of(model: str) -> list[Reference]:
    return [r for r in REFERENCES if r.model == model]


def table_reference(device_name: str, figure: str, sms: int | None = None, arch: str | None = None) -> Reference | None:
    """The model's entry for this figure: its own name first, then its alias, then a stem entry for any size
    ("device copy" for "device copy 8 GiB")."""
    model = model_of(device_name, sms, arch)
    if model is None:
        return None
    entries = references_of(model.key)
    for wanted in (figure, ALIASES.get(figure)):
        found = next((r for r in entries if r.figure == wanted and r.size != "any"), None)
        if found is not None:
            return found
    return next((r for r in entries if r.size == "any" and figure.startswith(r.figure + " ")), None)


def _same_name(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def baseline_reference(baseline: dict[str, Any], device_name: str, figure: str) -> Reference | None:
    """The baseline's figure for this device's model (its name exactly, as the baseline's run saw it)."""
    for wanted in dict.fromkeys((figure, ALIASES.get(figure, figure))):  # its own figure first, then its alias
        for key, entry in baseline.get("figures", {}).items():
            model, _, name = key.partition("/")
            if name == wanted and _same_name(model, device_name):
                source = str(entry.get("source") or baseline.get("source") or "the baseline file")
                return Reference(
                    model, name, float(entry["value"]), str(entry.get("unit", "")), "baseline", source, "baseline"
                )
    return None


def reference_for(
    device_name: str,
    figure: str,
    baseline: dict[str, Any] | None = None,
    sms: int | None = None,
    arch: str | None = None,
) -> Reference | None:
    """The baseline's figure where a baseline was given (and names this one), else the table's; None if neither."""
    if baseline:
        found = baseline_reference(baseline, device_name, figure)
        if found is not None:
            return found
    return table_reference(device_name, figure, sms, arch)


def grade(value: float, reference: Reference) -> tuple[Status, float]:
    """FAIL below half of the reference, WARN below its entry's band (15% below, or wider for figures that move
    run to run, such as training), else PASS; with the share of it."""
    share = value / reference.value
    if share < (FAIL_BELOW if reference.fail_below is None else reference.fail_below):
        return Status.FAIL, share
    if share < reference.warn_below:
        return Status.WARN, share
    return Status.PASS, share


# The unit each kind of figure is in, and which of a model's peaks may bound it.
KIND_UNITS = {
    "matmul": "TFLOP/s",
    "device copy": "GB/s",
    "host link": "GB/s",
    "training": "samples/s",
    "cpu matmul": "GFLOP/s",
    "cpu training": "samples/s",  # a share of the host's cores x clock x FLOP/cycle, in the board network's FLOPs
}
# matmul: its dtype's peak; a CPU figure: the measured host's cores x clock x FLOP/cycle (the limit rigcheck computes)
KIND_PEAKS = {"device copy": ("memory",), "host link": ("host_link",), "cpu training": ("cpu_fp32",)}
NO_PEAK_KINDS = ("training",)  # samples/s has no datasheet figure to be a share of
SHARE_RANGE = (0.20, 1.00)  # an achieved figure above its peak, or under a fifth of it, is a unit slip or a typo


def entry_problems(reference: Reference, models: tuple[Model, ...] | None = None) -> list[str]:
    """What is wrong with one entry: its unit for its kind, its peak (the model's, in its unit), its share of it
    (`models`: the table's, by default)."""
    models = MODELS if models is None else models
    where = f"{reference.model} {reference.figure}"
    model = next((m for m in models if m.key == reference.model), None)
    if model is None:
        return [f"{where}: no model {reference.model!r} in the table"]
    problems = []
    unit = KIND_UNITS.get(reference.figure_kind)
    if unit is None:
        problems.append(f"{where}: unknown kind {reference.figure_kind!r}")
    elif reference.unit != unit:
        problems.append(f"{where}: a {reference.figure_kind} figure in {reference.unit!r}, not {unit!r}")
    if reference.figure_kind in NO_PEAK_KINDS:
        return problems
    allowed: tuple[str, ...] = KIND_PEAKS.get(
        reference.figure_kind, (reference.figure.split()[1] if " " in reference.figure else "",)
    )
    if reference.figure_kind in ("matmul", "cpu matmul"):
        prefix = "cpu_" if reference.figure_kind == "cpu matmul" else ""
        allowed = tuple(
            prefix + d for d in ("fp32", "tf32", "fp16", "bf16", "fp8") if re.search(rf"\b{d}\b", reference.figure)
        )
    if reference.peak is None or reference.peak_of not in allowed:
        return [*problems, f"{where}: its peak ({reference.peak_of or 'none'}) is not one of {allowed}"]
    if model.peaks.get(reference.peak_of) != reference.peak:
        problems.append(f"{where}: its peak {reference.peak} is not the model's {reference.peak_of} datasheet figure")
    share = share_of_peak(reference)
    low, high = SHARE_RANGE
    if not low <= share <= high:
        problems.append(
            f"{where}: {reference.value:,.4g} {reference.unit} is {share:.0%} of its peak {reference.peak:,.4g}"
        )
    return problems


def share_of_peak(reference: Reference) -> float:
    """The share of its peak an entry reached; a CPU training entry's samples/s are counted in the board network's
    FLOPs per sample against its host's cores x clock x FLOP/cycle (GFLOP/s), like its matmul entries."""
    flops = figure_flops(reference.figure) if reference.unit == "samples/s" else None
    value = reference.value * flops / 1e9 if flops else reference.value
    return value / float(reference.peak or 1.0)


MODELS, REFERENCES, SOURCES = load()  # last: load() checks each entry with entry_problems
