"""One line per GPU figure of a `rigcheck run --json` report with what issue 31 items 1, 5 and 6 judge: its
trust and reasons, where its clocks came from, memory no listed process accounts for, the GPU before the
figure while rigcheck had no work on it, unseen processes and idle holders; then the counts and every FAIL."""

from __future__ import annotations

import collections
import json
import sys


def _mib(value: object) -> str:
    return "-" if value is None else f"{float(value) / 2**20:,.0f}MiB"  # type: ignore[arg-type]


def main(path: str) -> None:
    with open(path) as f:
        report = json.load(f)
    figures = [m for m in report["measurements"] if str(m.get("device", "")).startswith("cuda")]
    counts = collections.Counter((m.get("conditions") or {}).get("trust", "none") for m in figures)
    not_judged = 0
    for m in figures:
        c = m.get("conditions") or {}
        before = c.get("gpu_idle_before") or {}
        idle = f"{before.get('utilization_pct')}%/{before.get('power_w')}W@-{before.get('age_s')}s" if before else "-"
        unseen = c.get("unseen_user")
        holders = [f"{h['pid']}:{_mib(h.get('gpu_memory'))}" for h in c.get("gpu_idle_holders") or []]
        notes = c.get("notes") or []
        not_judged += any("clocks not judged" in n for n in notes)
        print(
            f"  {m['name'][:26]:26} {m['value']:>9,.4g} {c.get('trust', '-'):8} clocks={c.get('clocks_from', 'window')}"
            f" unlisted={_mib(c.get('gpu_unlisted_memory'))} before={idle}"
            f" unseen={unseen and (unseen['worked'], _mib(unseen['gpu_memory']))} holders={holders or '-'}"
            + (" LIST-BLIND" if c.get("gpu_list_blind") else "")
        )
        for reason in c.get("trust_reasons") or []:
            print(f"      reason: {reason[:240]}")
        for note in notes:
            if "cannot see" in note or "did no work" in note or "NVML lists none" in note:
                print(f"      note: {note[:240]}")
    print(f"  == {len(figures)} GPU figures: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"  == figures with 'clocks not judged': {not_judged}")
    for v in report["verdicts"]:
        if v["status"] not in ("PASS", "SKIP", "INFO"):
            print(f"  {v['status']} {v['stage']}/{v.get('check_name')}: {v['explanation'][:240]}")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        print(f"== {argument}")
        main(argument)
