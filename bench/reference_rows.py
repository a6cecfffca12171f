"""Issue 32: one run's figures as rows for engine/measure/references.json, ready to paste, and what the run's
expectation verdicts said. Usage: python3 bench/reference_rows.py REPORT.json [REPORT.json ...] (rigcheck run --json).

Each row names its source id (add the source once, with the run count, when three runs agree); the datasheet peak
is the model's, so `tests/unit/test_reference_table.py` checks the share. CPU rows carry this host's limit as
their peak (cores x clock x FLOP/cycle), under the CPU model's name.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.facts.present_gpus import present_gpus
from rigcheck.engine.measure.references import model_of

KINDS = (
    (r"^matmul (fp32|tf32|fp16|bf16|fp8) (\d+)$", "matmul"),
    (r"^max-find (bf16|fp8)$", "matmul"),
    (r"^device copy (.+)$", "device copy"),
    (r"^(host to device|device to host) pinned (.+)$", "host link"),
    (r"^train (c\d+ b\d+) (fp32|bf16)$", "training"),
)


def kind_of(name: str) -> str | None:
    return next((kind for pattern, kind in KINDS if re.match(pattern, name)), None)


def peak_of(kind: str, name: str) -> str | None:
    if kind == "device copy":
        return "memory"
    if kind == "host link":
        return "host_link"
    found = re.search(r"\b(fp32|tf32|fp16|bf16|fp8)\b", name)
    return found.group(1) if kind == "matmul" and found else None


def rows(report: dict, source: str) -> list[dict]:
    out = []
    for m in report["measurements"]:
        c, p = m.get("conditions") or {}, m.get("params") or {}
        if p.get("broken") or p.get("launch_bound") or m["value"] is None:
            continue
        if m["device"] == "cpu" and m["unit"] == "GFLOP/s" and p.get("limit"):
            dtype = re.search(r"\b(fp32|bf16)\b", m["name"])
            out.append({
                "model": cpu_facts().get("model"), "figure": m["name"], "kind": "cpu matmul",
                "value": round(m["value"], 1), "unit": "GFLOP/s", "source": source,
                "peak": round(p["limit"], 1), "peak_of": f"cpu_{dtype.group(1) if dtype else 'fp32'}",
                "note": f"{p.get('limit_basis')}; {p.get('threads')} thread(s); trust {c.get('trust')}",
            })  # fmt: skip
            continue
        kind = kind_of(m["name"])
        model = model_of(str(c.get("gpu_name") or "")) if m["device"].startswith("cuda") else None
        if kind is None or model is None:
            continue
        figure = "best-" + m["name"].split()[1] if m["name"].startswith("max-find") else m["name"]
        peak = peak_of(kind, m["name"])
        row = {"model": model.key, "figure": figure, "kind": kind, "value": round(m["value"], 1), "unit": m["unit"]}
        row |= {"source": source}
        if peak and peak in model.peaks:
            row |= {"peak": model.peaks[peak], "peak_of": peak}
        row["note"] = f"trust {c.get('trust')}, {m['device']}"
        out.append(row)
    return out


def main(paths: list[str]) -> None:
    date = time.strftime("%Y-%m-%d")
    for path in paths:
        if not Path(path).is_file():
            print(f"== {path}: missing (its run wrote no report; see the .out file beside it)")
            continue
        report = json.loads(Path(path).read_text())
        basis = (report.get("fingerprint") or {}).get("basis") or {}
        print(f"== {path}: run {report['run']['id']}, {date}, torch {basis.get('torch')}, driver {basis.get('driver')}")
        print(f"   GPUs: {[(g.name, g.pci_id) for g in present_gpus()]}; CPU: {cpu_facts().get('model')}")
        found = rows(report, f"rigcheck-h200-{date}")
        cpu = {r["peak_of"]: r["peak"] for r in found if r["kind"] == "cpu matmul"}
        if cpu:  # the CPU's model entry, once: its name as a pattern, this host's limits as its peaks
            name = str(cpu_facts().get("model"))
            model = {"key": name, "pattern": re.escape(name), "vendor": "cpu", "peaks": cpu}
            source = "the measuring host's cores x clock x FLOP/cycle (rigcheck's limit)"
            print("   " + json.dumps(model | {"peak_source": source}))
        for row in found:
            print("   " + json.dumps(row))
        for v in report["verdicts"]:
            name = v.get("check_name") or ""
            if name.startswith(("link", "history", "roofline", "cpu ", "expectations", "reference", "peers")):
                print(f"   {v['status']:5} {v.get('device') or '-':7} {name}: {v['explanation']}")


if __name__ == "__main__":
    main(sys.argv[1:])
