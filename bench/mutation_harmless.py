"""The surviving mutants bench/mutation.py judges equivalent: each changes no verdict, label or word any caller
can see, for the one-line reason given (bench/RESULTS.md lists them by run).

Keyed by (module path, cosmic-ray operator, the original line stripped); tests/unit/test_mutation_list.py keeps
every line a real line of its module, so a stale entry fails rather than excusing nothing.
"""

from __future__ import annotations

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
    ): "`steady`: a default no caller uses (contended and cpu_contention pass it); `quota`: only contended "
    "leaves it out, and contended asks for every CPU, where others + cpus > cpus - slack holds with or without "
    "the slack for any others past the floor",
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
    (
        "engine/fleet/compare_hosts.py",
        "core/NumberReplacer",
        "f\"{', '.join(hs)} differ from {', '.join(first)} in {_differing(bases[hs[0]], bases[first[0]])}\"",
    ): "the hosts of one group share one print, so one basis (or, without bases, none): its first and last agree",
    (
        "engine/measure/plausibility.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'as_what = "TF32" if precision == "high" else "TF32 or bf16"',
    ): "only 'high' or 'medium' reach it, and 'medium' sorts after 'high': <= is ==",
    (
        "engine/stages/verify/matmul.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'rounded = torch.float16 if name == "fp16" else torch.bfloat16',
    ): "only 'fp16' or 'bf16' reach it, and 'bf16' sorts before 'fp16': >= is ==",
    **{
        ("engine/stages/verify/matmul.py", operator, "ok = within(device_error, tolerance) and unwritten == 0"): (
            "an unwritten element keeps its NaN poison, so the error is NaN and never within: the count only words "
            "the verdict (a count is never negative, so <= 0 is == 0)"
        )
        for operator in ("core/ReplaceComparisonOperator_Eq_LtE", "core/ReplaceComparisonOperator_Eq_GtE")
    },
    # engine/trust/reference.py (issue 36, second session)
    (
        "engine/trust/reference.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "if status == Status.PASS:",
    ): "Status is an Enum: each member is one object, so identity and equality agree",
    (
        "engine/trust/reference.py",
        "core/ReplaceBinaryOperator_Sub_Mod",
        "band = 1 - reference.warn_below  # the entry's own tolerance",
    ): "1 % w is exactly 1 - w for every w in (0.5, 1], and every entry's warn_below is there (0.85 or 0.7; one "
    "at or below FAIL_BELOW's 0.5 would leave no WARN to give)",
    **{
        (
            "engine/trust/reference.py",
            operator,
            "bands = sorted({round(v.tolerance if v.tolerance is not None else 1 - WARN_BELOW, 4) for v in judged})",
        ): "a dead fallback: every verdict reference_verdict makes carries its band as its tolerance, never None"
        for operator in (
            "core/NumberReplacer",
            *(
                f"core/ReplaceBinaryOperator_Sub_{op}"
                for op in (
                    "Add",
                    "Mul",
                    "Div",
                    "FloorDiv",
                    "Mod",
                    "Pow",
                    "BitOr",
                    "BitAnd",
                    "BitXor",
                    "LShift",
                    "RShift",
                )
            ),
        )
    },
    (
        "engine/measure/references.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'prefix = "cpu_" if reference.figure_kind == "cpu matmul" else ""',
    ): "inside `if figure_kind in ('matmul', 'cpu matmul')`: 'matmul' sorts after 'cpu matmul', so <= is ==",
    (
        "engine/trust/clocks.py",
        "core/ReplaceComparisonOperator_NotEq_Gt",
        'if bound != "compute" or ratio is None:',
    ): "a figure's bound is compute, host, link or memory (every stage's params): none sorts before 'compute', so "
    "> is !=",
    (
        "engine/trust/clocks.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'if bound == "memory" and mem_ratio is not None and mem_ratio < policy.mem_clock_ratio_min:',
    ): "a figure's bound is compute, host, link or memory: none sorts after 'memory', so >= is ==",
    (
        "engine/trust/clocks.py",
        "core/NumberReplacer",
        'busy = device_timed or (conditions.get("utilization_mean_pct") or 0.0) >= GPU_BUSY_PCT',
    ): "the stand-in for an unread (or zero) utilization: 1.0 or -1.0 is as far under the 50% as 0.0",
    (
        "engine/trust/judge.py",
        "core/NumberReplacer",
        'if conditions.get("samples", 0) < policy.min_samples:',
    ): "a missing count is under min_samples (3) as 0 or as 1, and the reason's words read the count apart",
    (
        "engine/trust/conditions.py",
        "core/ReplaceBinaryOperator_Sub_Mod",
        "if len(samples) < self.policy.min_samples and end - start < self.policy.widen_s:",
    ): "start and end are epoch seconds (1.7e9): end % start is end - start whenever start <= end < 2 * start",
    (
        "engine/trust/conditions.py",
        "core/ReplaceComparisonOperator_Lt_LtE",
        "if time.time() < end + self.settle_s:",
    ): "only a clock reading exactly at the settle time differs, and there the wait is max(0, 0): nothing",
    (
        "engine/gate/outcome.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "return verdict.status == Status.SKIP and bool(_COULD_NOT.search(why))",
    ): "Status is an Enum: each member is one object, so `is` and `==` agree on every status",
    (
        "engine/gate/outcome.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        "if state == CRITICAL:",
    ): "of the four states only CRITICAL sorts at or before 'CRITICAL' ('OK' returned above; 'UNKNOWN', 'WARN' after)",
    (
        "engine/gate/checks.py",
        "core/ReplaceComparisonOperator_Gt_IsNot",
        "if found > expected:",
    ): "reached only when found is not below expected; GPU counts are small ints, one object per value (to 256)",
    (
        "engine/gate/checks.py",
        "core/NumberReplacer",
        'vendors = Counter(key.split(" ", 1)[0] for key in by_version)',
    ): "only the first word is kept: how many more splits follow changes nothing before the first space",
    (
        "engine/trust/expect_cpu.py",
        "core/NumberReplacer",
        "achievable = reference.value / float(reference.peak or 1.0)",
    ): "cpu_reference returns only entries with a peak, so the `or` default is never reached",
    (
        "engine/trust/expect_cpu.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        "if graded == Status.WARN and threads:",
    ): "graded is PASS or WARN, and only WARN sorts at or after 'WARN'",
    (
        "engine/trust/expect_cpu.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "if graded == Status.WARN and threads:",
    ): "Status is an Enum: each member is one object, so `is` and `==` agree on every status",
    # the modules issues 40 and 41 added (mutD's scoring)
    (
        "engine/trust/mechanism.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'if dtype == "tf32" and value <= TF32_AT_FP32 * peak:',
    ): "a matmul's dtype is fp32, tf32, fp16, bf16 or fp8 (stages/matmul): none sorts after 'tf32', so >= is ==",
    (
        "engine/trust/expect_arch.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'basis = found.short if derived else f"{found.model} '
        "{'the baseline' if found.kind == 'baseline' else found.short}\"",
    ): "a reference's kind is 'published', 'published MAMF', 'rigcheck-measured', 'baseline' or 'expected' (derived, "
    "not reached): none sorts before 'baseline', so <= is ==",
    (
        "engine/measure/arch_shares.py",
        "core/ReplaceComparisonOperator_NotEq_Lt",
        'unit = {"memory": "GB/s"}.get(fig.peak_of, "TFLOP/s") if fig.kind != "training" else "samples/s"',
    ): "classify's kinds are matmul, max-find, device copy and training: every other sorts before 'training', so < "
    "is !=",
    (
        "engine/measure/arch_shares.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'if fig.kind == "training" and fig.batch is not None and fig.batch < LAUNCH_BATCH:',
    ): "classify's kinds are matmul, max-find, device copy and training: none sorts after 'training' (and only a "
    "training figure has a batch), so >= is ==",
    (
        "engine/measure/arch_peaks.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'unit = "SMs" if entry["vendor"] == "nvidia" else "CUs"',
    ): "arch_rates.json's vendors are 'nvidia' and 'amd': only 'nvidia' sorts at or after it, so >= is ==",
    (
        "engine/measure/arch_peaks.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        'source = "nvml-memory" if entry["vendor"] == "nvidia" else "amdgpu-mclk"',
    ): "arch_rates.json's vendors are 'nvidia' and 'amd': only 'nvidia' sorts at or after it, so >= is ==",
    (
        "engine/measure/arch_peaks.py",
        "core/ReplaceComparisonOperator_LtE_Lt",
        "return self.error is not None and abs(self.error) <= TOLERANCE",
    ): "an error near 3% is a quotient near 1 less 1, exact and a multiple of 2**-53; 0.03 is not one "
    "(0x1.eb851eb851eb8p-6), so no error equals TOLERANCE and < is <=",
}
