"""Mutation testing of the modules that decide verdicts and labels, with cosmic-ray: each module is mutated
one small change at a time (in a scratch copy of the repository, never in place) and its own unit tests are
run against each mutant; a mutant no test notices has survived.

    python bench/mutation.py                                   # every module below, every mutant (hours)
    python bench/mutation.py engine/trust/peers.py             # some of them, by path
    python bench/mutation.py --sample 50 engine/fleet/compare_hosts.py   # a seeded sample of its mutants
    python bench/mutation.py --ci                              # CI's fast subset, about 2 minutes

A mutant is *invalid*, and counted apart, where its module no longer compiles (cosmic-ray 8.7 turns the `**`
of `{**a, **b}` into an operator) or pytest ends in a collection error (exit 2 to 5): a test that could not
run killed nothing. Score = killed / (killed + survived that are not listed as equivalent in
bench/mutation_harmless.py). Prints each module's counts and every survivor (line, operator, diff); --json
FILE keeps them. Exit 1 when a mutant survives unexcused in --ci mode, 0 otherwise (the full run is a report:
bench/RESULTS.md judges survivors). Needs cosmic-ray (in the test extras).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_harmless import HARMLESS  # noqa: F401  (tests read it here)
from mutation_outcomes import NOT_RUN_MARK, classify, results, score

REPO = Path(__file__).resolve().parent.parent
# the snapshot plugins load textual at start: a second per mutant that no module here needs
PYTEST = f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:textual-snapshot -p no:syrupy -p no:anyio"
# module path -> the tests that judge it; each module is scoped to its own tests, so a mutant costs seconds
MODULES: dict[str, str] = {
    # (test_truth_guards's fingerprint tests spend 18 s in subprocesses on no line of the trust modules)
    "engine/trust/conditions.py": "tests/unit/test_conditions.py tests/unit/test_power_limit_trust.py "
    "tests/unit/test_figure_causes.py tests/unit/test_cpu_set.py tests/unit/test_others_one_window.py "
    "tests/unit/test_trust_threshold_edges.py tests/unit/test_clock_words_edges.py "
    "tests/unit/test_judge_words_edges.py tests/unit/test_annotator_edges.py tests/unit/test_truth_guards.py "
    "-k 'not fingerprint'",
    "engine/trust/judge.py": "tests/unit/test_judge_record_edges.py tests/unit/test_conditions.py "
    "tests/unit/test_power_limit_trust.py tests/unit/test_figure_causes.py tests/unit/test_cpu_set.py "
    "tests/unit/test_one_judge.py "
    "tests/unit/test_trust_threshold_edges.py tests/unit/test_clock_words_edges.py "
    "tests/unit/test_judge_words_edges.py tests/unit/test_annotator_edges.py",
    "engine/trust/policy.py": "tests/unit/test_conditions.py tests/unit/test_cpu_set.py "
    "tests/unit/test_power_limit_trust.py tests/unit/test_trust_threshold_edges.py",
    # (test_truth_guards's fingerprint test spends 18 s in subprocesses on no line of plausibility.py)
    "engine/measure/plausibility.py": "tests/unit/test_plausibility_edges.py tests/unit/test_figure_causes.py "
    "tests/unit/test_truth_guards.py -k 'not fingerprint'",
    "engine/stages/common/limits.py": "tests/unit/test_device_limits.py tests/unit/test_expect_cpu_training.py",
    "engine/trust/peers.py": "tests/unit/test_fleet_compare.py tests/unit/test_figure_causes.py",
    "engine/trust/reference.py": "tests/unit/test_references.py tests/unit/test_figure_causes.py "
    "tests/unit/test_expectation_causes.py tests/unit/test_one_cause.py tests/unit/test_reference_edges.py",
    "engine/measure/references.py": "tests/unit/test_references.py tests/unit/test_reference_table.py "
    "tests/unit/test_expectation_causes.py tests/unit/test_reference_lookup_edges.py",
    "engine/stages/health/checks.py": "tests/functional/test_health.py -k 'not cli and not ctypes'",
    "engine/stages/burn/verdicts.py": "tests/unit/test_burn_verdicts.py tests/functional/test_burn.py -k 'not "
    "burn_passes and not wrong_element and not quarter and not cancel and not bad_duration'",
    "engine/stages/hostbugs/stage.py": "tests/unit/test_hostbug_detectors.py",
    "engine/stages/hostbugs/sgemm_race.py": "tests/unit/test_hostbug_detectors.py",
    # (verify's model checks train a network, 20 s and more a run, and run no line of matmul.py)
    "engine/stages/verify/matmul.py": "tests/unit/test_verify_matmul.py tests/unit/test_verify_detectors.py -k 'not "
    "model and not steps and not batchnorm and not soak and not parameter'",
    "engine/stages/verify/model.py": "tests/unit/test_verify_detectors.py",
    "engine/stages/verify/memory.py": "tests/unit/test_verify_memory.py",
    "engine/fleet/compare_hosts.py": "tests/unit/test_two_host_fleet.py tests/unit/test_fleet_compare.py",
    "engine/fleet/probe_differences.py": "tests/unit/test_two_host_fleet.py tests/unit/test_fleet_compare.py",
    "engine/fleet/verdicts.py": "tests/unit/test_fleet_compare.py",
    # the modules issues 31-33 added or split out (clocks.py and summary.py are scored in bench/RESULTS.md)
    "engine/trust/cause.py": "tests/unit/test_one_cause.py tests/unit/test_expectation_causes.py "
    "tests/unit/test_cause_edges.py",
    "engine/trust/settle.py": "tests/unit/test_settle_edges.py tests/unit/test_settle_not_a_result.py "
    "tests/unit/test_one_cause.py",
    "engine/trust/clocks.py": "tests/unit/test_conditions.py tests/unit/test_power_limit_trust.py "
    "tests/unit/test_figure_causes.py tests/unit/test_trust_threshold_edges.py tests/unit/test_clock_words_edges.py "
    "tests/unit/test_truth_guards.py -k 'not fingerprint'",
    "engine/trust/summary.py": "tests/unit/test_conditions.py tests/unit/test_cpu_set.py "
    "tests/unit/test_cpu_set_ticks.py tests/unit/test_others_one_window.py tests/unit/test_telemetry_processes.py "
    "tests/unit/test_window_summary_edges.py",
    "engine/trust/unseen.py": "tests/unit/test_unseen_edges.py tests/unit/test_unseen_users.py "
    "tests/unit/test_span_clocks.py",
    "engine/facts/settings.py": "tests/unit/test_settings_edges.py tests/unit/test_settings_table.py",
    "engine/trust/expect_link.py": "tests/unit/test_link_edges.py tests/unit/test_expectations.py "
    "tests/unit/test_expectation_causes.py",
    "engine/trust/expect_cpu.py": "tests/unit/test_expect_cpu_words.py tests/unit/test_expectations.py "
    "tests/unit/test_expectation_causes.py tests/unit/test_expect_cpu_training.py",
    "engine/trust/expect_words.py": "tests/unit/test_expect_words_edges.py tests/unit/test_expectations.py "
    "tests/unit/test_expectation_causes.py tests/unit/test_exit_words.py",
    "engine/trust/expect_training.py": "tests/unit/test_roofline_edges.py tests/unit/test_expectations.py "
    "tests/unit/test_expectation_causes.py tests/unit/test_arch_expectations.py",
    "engine/trust/expectations.py": "tests/unit/test_expectation_count_edges.py tests/unit/test_expectations.py "
    "tests/unit/test_arch_expectations.py tests/unit/test_cpu_baseline.py tests/unit/test_history_host_bound.py",
    "engine/trust/history.py": "tests/unit/test_expectations.py tests/unit/test_history_store.py "
    "tests/unit/test_history_host_bound.py tests/unit/test_history_edges.py",
    "engine/gate/checks.py": "tests/unit/test_gate_checks_edges.py tests/unit/test_gate.py",
    "engine/gate/memory.py": "tests/unit/test_gate.py",
    "engine/gate/outcome.py": "tests/unit/test_gate_outcome_words.py tests/unit/test_gate.py",
    # the judgement record, its whole form and the one stage judge issue 39 added
    "engine/trust/judgement.py": "tests/unit/test_judgement_record.py tests/unit/test_one_judge.py "
    "tests/unit/test_one_cause.py tests/unit/test_cause_edges.py",
    "engine/trust/explained.py": "tests/unit/test_explained_edges.py tests/unit/test_one_judge.py",
    "engine/trust/stage_judge.py": "tests/unit/test_stage_judge.py",
    # the modules issues 40 and 41 added (expectations from the architecture; the cause by its mechanism)
    "engine/trust/mechanism.py": "tests/unit/test_mechanism_edges.py tests/unit/test_mechanism_cause.py",
    "engine/trust/expect_arch.py": "tests/unit/test_expect_arch_edges.py tests/unit/test_arch_expectations.py",
    "engine/measure/arch_shares.py": "tests/unit/test_arch_shares_edges.py tests/unit/test_arch_expectations.py "
    "tests/unit/test_leave_one_out.py",
    "engine/stages/common/oom.py": "tests/unit/test_oom_edges.py tests/unit/test_oom_holder.py",
    "engine/measure/leave_one_out.py": "tests/unit/test_leave_one_out_edges.py tests/unit/test_leave_one_out.py",
    "engine/measure/arch_peaks.py": "tests/unit/test_arch_peaks_edges.py tests/unit/test_arch_peaks.py "
    "tests/unit/test_gpu_props.py tests/unit/test_arch_expectations.py tests/unit/test_leave_one_out.py",
}
# the modules with the most gaps found last (issue 36), a sample small enough for CI's ~2 minutes
CI_MODULES = ("engine/stages/common/limits.py", "engine/fleet/compare_hosts.py")
CI_SAMPLE = 8
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


def test_command(tests: str) -> str:
    """pytest on the tests, through a shell that marks a run whose tests never judged the mutant."""
    script = f'{PYTEST} {tests}; rc=$?; [ $rc -ge 2 ] && echo "{NOT_RUN_MARK} $rc"; exit $rc'
    return f"sh -c {shlex.quote(script)}"


def config(module: str, tests: str, path: Path) -> Path:
    path.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module}"\n'
        f"timeout = {TIMEOUT_S}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(test_command(tests))}\n"
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


def run_module(module: str, sample: int, seed: int, work: Path, env: dict[str, str], cwd: Path) -> dict:
    tests = MODULES[module]
    folder = work / module.replace("/", "_")
    folder.mkdir()
    cfg, session = config(module, tests, folder / "cr.toml"), folder / "session.sqlite"
    started = time.monotonic()
    baseline = subprocess.run(f"{PYTEST} {tests}", shell=True, cwd=cwd, env=env, capture_output=True, text=True)
    if baseline.returncode != 0:
        return {"module": module, "error": "its tests fail unmutated:\n" + baseline.stdout[-2000:]}
    cr = [sys.executable, "-m", "cosmic_ray.cli"]
    subprocess.run([*cr, "init", str(cfg), str(session)], cwd=cwd, env=env, check=True, capture_output=True)
    source = (cwd / module).read_text()
    total, in_annotations = keep_sample(session, sample, seed, source)
    subprocess.run([*cr, "exec", str(cfg), str(session)], cwd=cwd, env=env, check=True, capture_output=True)
    found = results(session)
    kinds = classify(module, source, found)
    for row in found:
        row.pop("output", None)  # long, and kept in the session only
    return {
        "module": module,
        "tests": tests,
        "mutants": total,
        "in_annotations": in_annotations,
        "tried": len(found),
        "killed": len(kinds["killed"]),
        "survived": kinds["survived"],
        "equivalent": len([s for s in kinds["survived"] if s["harmless"]]),
        "invalid": [{k: r[k] for k in ("line", "operator", "invalid")} for r in kinds["invalid"]],
        "incompetent": len(kinds["incompetent"]),
        "score": score(len(kinds["killed"]), kinds["survived"]),
        "seconds": round(time.monotonic() - started),
    }


def resolve(names: list[str]) -> tuple[list[str], list[str]]:
    """Each name as a module path: the path itself, or the one module whose path ends with it; and the unknown."""
    found, unknown = [], []
    for name in names:
        matches = [m for m in MODULES if m == name or m.endswith("/" + name.lstrip("/"))]
        (found if len(matches) == 1 else unknown).append(matches[0] if len(matches) == 1 else name)
    return found, unknown


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("modules", nargs="*", help=f"module paths; default: every one of {', '.join(MODULES)}")
    parser.add_argument("--sample", type=int, default=0, help="a seeded random sample of each module's mutants")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--ci", action="store_true", help=f"{CI_SAMPLE} mutants of each of {', '.join(CI_MODULES)}")
    parser.add_argument("--json", type=Path, help="write every module's result here")
    args = parser.parse_args()
    modules, unknown = resolve(args.modules)
    if unknown:
        print(f"mutation: no one module at {', '.join(unknown)}; choose from {', '.join(MODULES)}", file=sys.stderr)
        return 2
    if shutil.which("cosmic-ray", path=str(Path(sys.executable).parent)) is None:
        print("mutation: cosmic-ray is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    names = list(CI_MODULES) if args.ci else (modules or list(MODULES))
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
            print(summary(result), flush=True)
            if args.json:  # after each module: a run stopped at a deadline keeps what it finished
                args.json.write_text(json.dumps(out, indent=1))
    print(
        "\n| module | sampled | killed | survived | equivalent | invalid | score |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    print("\n".join(table_row(r) for r in out if not r.get("error")))
    if args.ci and any(r.get("error") or [s for s in r.get("survived", []) if not s["harmless"]] for r in out):
        return 1
    return 0


def table_row(result: dict) -> str:
    return (
        f"| {result['module']} | {result['tried']} | {result['killed']} | {len(result['survived'])} | "
        f"{result['equivalent']} | {len(result['invalid'])} | {result['score']} |"
    )


def summary(result: dict) -> str:
    if result.get("error"):
        return f"{result['module']}: {result['error']}"
    head = (
        f"{result['module']}: score {result['score']}, {result['killed']} killed, {len(result['survived'])} "
        f"survived ({result['equivalent']} equivalent), {len(result['invalid'])} invalid, {result['incompetent']} "
        f"incompetent, of {result['tried']} tried ({result['mutants']} in all, {result['in_annotations']} of them "
        f"in type annotations, not run), {result['seconds']} s"
    )
    lines = [head] + [f"  invalid line {r['line']} {r['operator']}: {r['invalid']}" for r in result["invalid"]]
    lines += [
        f"  survived line {s['line']} {s['operator']}"
        + (f" (equivalent: {s['harmless']})" if s["harmless"] else "")
        + f":\n{s['diff']}"
        for s in result["survived"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
