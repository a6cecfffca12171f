"""Mutation testing of the modules that decide verdicts and labels, with cosmic-ray: each module is mutated
one small change at a time (in a scratch copy of the repository, never in place) and its own unit tests are
run against each mutant; a mutant no test notices has survived.

    python bench/mutation.py                      # every module below, every mutant (slow: hours on 2 cores)
    python bench/mutation.py peers limits         # some of them
    python bench/mutation.py --sample 40 health   # a seeded random sample of each module's mutants
    python bench/mutation.py --ci                 # CI's fast subset: a sample of two small modules, ~2 min

Prints each module's score and every surviving mutant (line, operator, diff); --json FILE keeps them. Exit 1
when a mutant survives in --ci mode, 0 otherwise (the full run is a report: bench/RESULTS.md judges survivors).
Needs `pip install cosmic-ray` (in the test extras).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the snapshot plugins load textual at start: a second per mutant that no module here needs
PYTEST = f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:textual-snapshot -p no:syrupy -p no:anyio"
# name -> (module, the tests that judge it); each module is scoped to its own tests, so a mutant costs seconds
MODULES: dict[str, tuple[str, str]] = {
    "conditions": ("engine/trust/conditions.py", "tests/unit/test_conditions.py tests/unit/test_truth_guards.py "
                   "tests/unit/test_power_limit_trust.py tests/unit/test_figure_causes.py tests/unit/test_cpu_set.py"),
    "limits": ("engine/measure/plausibility.py", "tests/unit/test_truth_guards.py tests/unit/test_figure_causes.py"),
    "clocks": ("engine/trust/clocks.py", "tests/unit/test_conditions.py tests/unit/test_power_limit_trust.py "
               "tests/unit/test_truth_guards.py"),
    "policy": ("engine/trust/policy.py", "tests/unit/test_conditions.py tests/unit/test_cpu_set.py"),
    "summary": ("engine/trust/summary.py", "tests/unit/test_conditions.py tests/unit/test_truth_guards.py "
                "tests/unit/test_others_one_window.py tests/unit/test_cpu_set.py"),
    "cause": ("engine/trust/cause.py", "tests/unit/test_one_cause.py tests/unit/test_references.py"),
    "settings": ("engine/facts/settings.py", "tests/unit/test_settings_table.py"),
    "peers": ("engine/trust/peers.py", "tests/unit/test_fleet_compare.py tests/unit/test_figure_causes.py"),
    "health": ("engine/stages/health/checks.py", "tests/functional/test_health.py -k 'not cli and not ctypes'"),
    "burn": ("engine/stages/burn/verdicts.py",
             "tests/functional/test_burn.py -k 'not burn_passes and not wrong_element and not quarter and not cancel "
             "and not bad_duration'"),
    "hostbugs": ("engine/stages/hostbugs/stage.py", "tests/unit/test_hostbug_detectors.py"),
    "sgemm": ("engine/stages/hostbugs/sgemm_race.py", "tests/unit/test_hostbug_detectors.py"),
    "verify-matmul": ("engine/stages/verify/matmul.py", "tests/unit/test_verify_detectors.py"),
    "verify-model": ("engine/stages/verify/model.py", "tests/unit/test_verify_detectors.py"),
    "verify-memory": ("engine/stages/verify/memory.py", "tests/unit/test_verify_memory.py"),
    "fleet-compare": ("engine/fleet/compare_hosts.py", "tests/unit/test_fleet_compare.py"),
    "fleet-verdicts": ("engine/fleet/verdicts.py", "tests/unit/test_fleet_compare.py"),
}  # fmt: skip
CI_MODULES = ("peers", "fleet-verdicts")
CI_SAMPLE = 8
# Survivors judged harmless (bench/RESULTS.md says why): (module, operator, the original line, stripped) -> reason.
# `is`/`is not` for `==`/`!=` on the same objects, or on strings no code compares by identity, change nothing.
HARMLESS: dict[tuple[str, str, str], str] = {
    (
        "engine/trust/peers.py",
        "core/ReplaceComparisonOperator_NotEq_IsNot",
        "yield unit, [v for u, v in values.items() if u != unit], 1.0 - value / best",
    ): "the keys compared are the very objects of one dict: identity and equality agree",
    (
        "engine/fleet/verdicts.py",
        "core/ReplaceComparisonOperator_NotEq_IsNot",
        'stage_figures = [(host, m) for host, m in figures if m.stage != "fleet-links"]',
    ): "a fleet-links figure let through is bound 'link', which the host-against-host rule never groups",
    (
        "engine/trust/policy.py",
        "core/ReplaceFalseWithTrue",
        "def interferes(self, others: float, threads: float, cpus: float, steady: bool = False, quota: bool = False)"
        " -> bool:",
    ): "a default no caller uses: both callers (contended, cpu_contention) pass `steady` themselves",
    (
        "engine/trust/clocks.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'elif capped and busy and state == "default":',
    ): "power_limit_state gives 'default', 'lowered' or 'unknown': none sorts before 'default', so <= is ==",
    (
        "engine/stages/health/checks.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'if state["state"] == "completed" and state["status"] == 0:',
    ): "NVML's fabric status is an nvmlReturn_t, never negative: <= 0 is == 0",
    **{
        ("engine/stages/hostbugs/stage.py", "core/NumberReplacer", line): "a workload size, not a rule: a verdict "
        "judges whatever size ran (tests/functional/test_stages_cpu.py runs the quick plan)"
        for line in (
            '"quick": (256, 2, (32, 64, 7, 7), BoardNetConfig(32, 2), 64),',
            '"standard": (1024, 6, (256, 128, 7, 7), BoardNetConfig(128, 6), 256),',
            '"full": (1024, 20, (256, 128, 7, 7), BoardNetConfig(128, 6), 1024),',
        )
    },
    (
        "engine/stages/burn/verdicts.py",
        "core/ReplaceComparisonOperator_Gt_NotEq",
        "if len(wrong) > 1",
    ): "inside `if wrong:`: the count is at least one, so != 1 is > 1",
    (
        "engine/stages/verify/memory.py",
        "core/NumberReplacer",
        "CHUNK = 2**30",
    ): "the size of each allocation, a workload size: the checks judge whatever was written (tests use 1 MiB)",
    (
        "engine/stages/verify/model.py",
        "core/ReplaceComparisonOperator_Gt_GtE",
        "if not math.isfinite(error) or error > worst:",
    ): "only a tie changes: which of two parameters with the same worst error is named",
    (
        "engine/stages/verify/model.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "ok = finite and changed == total",
    ): "two counts of a model's parameter tensors: small ints, which Python keeps one object each of",
    (
        "engine/stages/verify/model.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        "if step == 0:",
    ): "steps count from 0: <= 0 is == 0",
    (
        "engine/stages/verify/model.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        "ok = finite and changed == total",
    ): "`changed` counts tensors out of `total`: it is never more, so >= is ==",
    (
        "engine/fleet/compare_hosts.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        'by_cpu = "by CPU model" if cpu_models or any(key[1] for key in groups if key[0] == "CPU") else "by name"',
    ): "key[0] is this module's own literal 'CPU' or 'GPU': identity and equality agree",
    (
        "engine/fleet/compare_hosts.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        "if len(values) < 2 or len(counts) == 1:",
    ): "no counts at all means fewer than two values, caught before: <= 1 is == 1",
    (
        "engine/trust/peers.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'if not sound(m) or not (bound in ("compute", "memory") or (bound == "link" and m.params.get("pinned"))):',
    ): "the bounds are compute, memory, link and host: none but link itself sorts at or after 'link'",
    (
        "engine/trust/peers.py",
        "core/NumberReplacer",
        "best = values[ranked[1] if unit == ranked[0] else ranked[0]]",
    ): "ranked[1] -> ranked[0] sets the best unit against itself, and the best is never below the runner-up "
    "either: no verdict changes (ranked[-1], which does change one, is killed)",
    (
        "engine/fleet/verdicts.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'lost = {host for host, state in ((report.get("fleet") or {}).get("states") or {}).items() if state == "lost"}',
    ): "rank 0 judges once every host is done or lost (collector.py): 'done' sorts before 'lost', so >= is ==",
    (
        "engine/trust/peers.py",
        "core/NumberReplacer",
        "ranked = sorted(values, key=lambda u: values[u], reverse=True)[:2]",
    ): "only the first two of `ranked` are read: keeping three changes nothing",
    (
        "engine/stages/hostbugs/stage.py",
        "core/NumberReplacer",
        'cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)',
    ): "the fallback of a platform without sched_getaffinity; rigcheck runs on Linux, which has it",
    (
        "engine/stages/hostbugs/stage.py",
        "core/ReplaceOrWithAnd",
        'cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)',
    ): "the fallback of a platform without sched_getaffinity; rigcheck runs on Linux, which has it",
    (
        "engine/stages/hostbugs/stage.py",
        "core/NumberReplacer",
        "fraction, largest = repeat_twice(lambda: model(boards)[0])",
    ): "which of the board net's two heads is compared: both come from the one forward pass that must repeat",
    (
        "engine/stages/hostbugs/stage.py",
        "core/NumberReplacer",
        "conv = torch.nn.Conv2d(shape[1], shape[1], 3, padding=1).to(device)",
    ): "the GPU convolution's output channels: a workload shape, not a rule (its input channels must match)",
    (
        "engine/fleet/compare_hosts.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'if m.device == "cpu" and m.params.get("bound") == "host" and sound(m):',
    ): "devices are 'cpu' or 'cuda:N', and 'cuda:N' sorts after 'cpu': <= is ==",
}
TIMEOUT_S = 180.0


def scratch_copy(into: Path) -> Path:
    """The repository's tracked files (with this checkout's edits), and a shim that makes `import rigcheck.*`
    load them, as `pip install -e .` would: mutants live there, never in the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    shim = into / ".shim" / "rigcheck"
    shim.mkdir(parents=True)
    for name, target in (("engine", "engine"), ("tui", "tui"), ("themes", "themes"), ("fleet", "engine/fleet/entry")):
        (shim / name).symlink_to(into / target)
    return into / ".shim"


def config(module: str, tests: str, path: Path) -> Path:
    path.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {TIMEOUT_S}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(f'{PYTEST} {tests}')}\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    return path


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's type annotations are: with `from __future__ import annotations` they are strings
    that nothing evaluates, so a mutant there (`int | None` to `int & None`) cannot change a verdict."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        found = []
        if isinstance(node, ast.arg | ast.AnnAssign):
            found.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        for note in filter(None, found):
            spans.append(((note.lineno, note.col_offset), (note.end_lineno or 0, note.end_col_offset or 0)))
    return spans


def keep_sample(session: Path, sample: int, seed: int, source: str) -> tuple[int, int]:
    """Drop the mutants inside type annotations, then keep a seeded random `sample` of the rest; returns
    (mutants in all, of them in annotations)."""
    spans = annotation_spans(source)
    with sqlite3.connect(session) as db:
        # job ids are random: order by where and what each mutant is, so a seed draws the same sample every time
        order = "start_pos_row, start_pos_col, operator_name, occurrence"
        rows = db.execute(
            f"SELECT job_id, start_pos_row, start_pos_col FROM mutation_specs ORDER BY {order}"
        ).fetchall()
        noted = {job for job, row, col in rows if any(a <= (row, col) < b for a, b in spans)}
        jobs = [job for job, _, _ in rows if job not in noted]
        kept = set(random.Random(seed).sample(jobs, sample)) if sample and sample < len(jobs) else set(jobs)
        dropped = [(job,) for job, _, _ in rows if job not in kept]
        db.executemany("DELETE FROM mutation_specs WHERE job_id = ?", dropped)
        db.executemany("DELETE FROM work_items WHERE job_id = ?", dropped)
    return len(rows), len(noted)


def results(session: Path) -> list[dict]:
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT s.start_pos_row, s.operator_name, s.occurrence, r.worker_outcome, r.test_outcome, r.diff "
            "FROM mutation_specs s JOIN work_results r ON r.job_id = s.job_id ORDER BY s.start_pos_row"
        ).fetchall()
    keys = ("line", "operator", "occurrence", "worker", "test", "diff")
    found = [dict(zip(keys, row, strict=True)) for row in rows]
    for row in found:  # cosmic-ray writes its outcomes upper case (KILLED, NORMAL) in some versions
        row["worker"], row["test"] = str(row["worker"]).lower(), str(row["test"]).lower()
    return found


def original_line(diff: str) -> str:
    return next(
        (line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")), ""
    )


def harmless(module: str, survivor: dict) -> str | None:
    return HARMLESS.get((module, survivor["operator"], original_line(survivor["diff"] or "")))


def run_module(name: str, sample: int, seed: int, work: Path, env: dict[str, str], cwd: Path) -> dict:
    module, tests = MODULES[name]
    folder = work / name
    folder.mkdir()
    cfg, session = config(module, tests, folder / "cr.toml"), folder / "session.sqlite"
    started = time.monotonic()
    baseline = subprocess.run(f"{PYTEST} {tests}", shell=True, cwd=cwd, env=env, capture_output=True, text=True)
    if baseline.returncode != 0:
        return {"module": module, "error": "its tests fail unmutated:\n" + baseline.stdout[-2000:]}
    cr = [sys.executable, "-m", "cosmic_ray.cli"]
    subprocess.run([*cr, "init", str(cfg), str(session)], cwd=cwd, env=env, check=True, capture_output=True)
    total, in_annotations = keep_sample(session, sample, seed, (cwd / module).read_text())
    subprocess.run([*cr, "exec", str(cfg), str(session)], cwd=cwd, env=env, check=True, capture_output=True)
    found = results(session)
    killed = [r for r in found if r["test"] == "killed" or r["worker"] == "timeout"]
    survived = [r for r in found if r["test"] == "survived" and r["worker"] != "timeout"]
    for row in survived:
        row["harmless"] = harmless(module, row)
    incompetent = [r for r in found if r not in killed and r not in survived]
    tried = len(killed) + len(survived)
    return {
        "module": module,
        "tests": tests,
        "mutants": total,
        "in_annotations": in_annotations,
        "tried": len(found),
        "killed": len(killed),
        "survived": survived,
        "incompetent": len(incompetent),
        "score": round(len(killed) / tried, 3) if tried else None,
        "seconds": round(time.monotonic() - started),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("modules", nargs="*", help=f"default: every one of {', '.join(MODULES)}")
    parser.add_argument("--sample", type=int, default=0, help="a seeded random sample of each module's mutants")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--ci", action="store_true", help=f"{CI_SAMPLE} mutants of each of {', '.join(CI_MODULES)}")
    parser.add_argument("--json", type=Path, help="write every module's result here")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        print(f"mutation: no module named {', '.join(unknown)}; choose from {', '.join(MODULES)}", file=sys.stderr)
        return 2
    if shutil.which("cosmic-ray", path=str(Path(sys.executable).parent)) is None:
        print("mutation: cosmic-ray is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    names = list(CI_MODULES) if args.ci else (args.modules or list(MODULES))
    sample = CI_SAMPLE if args.ci else args.sample
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rigcheck-mutation-") as scratch:
        copy, work = Path(scratch) / "repo", Path(scratch) / "sessions"
        copy.mkdir()
        work.mkdir()
        shim = scratch_copy(copy)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), str(copy / "tests")]))
        for name in names:
            result = run_module(name, sample, args.seed, work, env, copy)
            out.append(result)
            print(summary(name, result), flush=True)
            if args.json:  # after each module: a run stopped at a deadline keeps what it finished
                args.json.write_text(json.dumps(out, indent=1))
    if args.ci and any(r.get("error") or [s for s in r.get("survived", []) if not s["harmless"]] for r in out):
        return 1
    return 0


def summary(name: str, result: dict) -> str:
    if result.get("error"):
        return f"{name} ({result['module']}): {result['error']}"
    head = (
        f"{name} ({result['module']}): score {result['score']}, {result['killed']} killed, "
        f"{len(result['survived'])} survived, {result['incompetent']} incompetent, of {result['tried']} tried "
        f"({result['mutants']} in all, {result['in_annotations']} of them in type annotations, not run), "
        f"{result['seconds']} s"
    )
    lines = [head] + [
        f"  survived line {s['line']} {s['operator']}"
        + (f" (harmless: {s['harmless']})" if s["harmless"] else "")
        + f":\n{s['diff']}"
        for s in result["survived"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
