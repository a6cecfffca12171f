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
        "engine/fleet/probe_differences.py",
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
        "engine/fleet/probe_differences.py",
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
        "engine/measure/references.py",
        "core/NumberReplacer",
        "return value / float(reference.peak or 1.0)",
    ): "share_of_peak's callers pass only entries with a peak (entry_problems after its peak check, cpu_reference, "
    "references' CPU lines), so the `or` default is never reached",
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
    (
        "engine/trust/stage_judge.py",
        "core/ReplaceTrueWithFalse",
        "@dataclass(frozen=True)",
    ): "the runner builds one StageFigures per stage and passes it on: nothing assigns to its fields or hashes it",
    (
        "engine/trust/stage_judge.py",
        "core/ReplaceComparisonOperator_Gt_NotEq",
        "if len(given.devices) > 1:",
    ): "differs only with no device, and a stage always has a child on a device (no child, no figures to compare)",
    (
        "engine/trust/judgement.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "return self.trust == Trust.SUSPECT and any(r.outside for r in self.reasons)",
    ): "every Judgement is built with a Trust member (the judge's own, or Trust.of in Judgement.of): an Enum's "
    "members are single objects, so `is` and `==` agree",
    (
        "engine/trust/judgement.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "detail = details[index] if len(details) == len(texts) else {}",
    ): "two counts of a figure's reasons: small ints, which Python keeps one object each of",
    (
        "engine/trust/judgement.py",
        "core/RemoveDecorator",
        "@staticmethod",
    ): "Expected.from_dict and Judgement.of are only ever called on their class, never an instance: a plain "
    "function there takes the same one argument",
    (
        "engine/trust/expectations.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'if any(m.device == "cpu" for m in missing):  # a CPU is known by its units, not its brand (issue 40)',
    ): "a figure's device is 'cpu' or a torch device ('cuda:N'; torch's device types all sort after 'cpu'): "
    "none sorts before 'cpu', so <= is ==",
    (
        "engine/trust/expectations.py",
        "core/ReplaceAndWithOr",
        'cpu_of_baseline = this_baseline_cpu() if baseline and any(m.device == "cpu" for m in figures) else ""',
    ): "the name is read only by cpu_baseline_reference, which returns None without a baseline or for a figure "
    "not on the CPU: reading it in those cases changes nothing",
    (
        "engine/trust/expect_training.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'return "bf16" if precision == "bf16" else "tf32"',
    ): "the figure's name pattern admits only 'fp32' or 'bf16', and 'fp32' sorts after 'bf16': <= is ==",
    (
        "engine/trust/expect_training.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "if graded == Status.WARN:",
    ): "Status is an Enum: each member is one object, so `is` and `==` agree on every status",
    (
        "engine/trust/expect_training.py",
        "core/ReplaceComparisonOperator_Eq_GtE",
        "if graded == Status.WARN:",
    ): "graded is PASS or WARN, and only WARN sorts at or after 'WARN'",
    (
        "engine/trust/expect_link.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        "if found.status == Status.FAIL and trust_in(m.conditions) is Trust.SUSPECT:",
    ): "judge gives PASS, WARN, FAIL or INCONCLUSIVE, and of those only FAIL sorts at or before 'FAIL'",
    (
        "engine/trust/expect_words.py",
        "core/ReplaceTrueWithFalse",
        "@dataclass(frozen=True)",
    ): "no caller assigns to or hashes a Judged: each reads its fields, and expect_link copies one with "
    "dataclasses.replace, which works on either",
    (
        "engine/trust/expect_words.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "if graded == Status.PASS:  # a setting in force or someone else's load, though it passed: noted",
    ): "Status is an Enum: each member is one object, so `is` and `==` agree on every status",
    **{
        ("engine/trust/expect_words.py", "core/ReplaceComparisonOperator_Eq_Is", line): "a Cause's kind is always "
        "a string literal of engine/trust/cause.py (likely_cause builds every one); identifier-like literals are "
        "interned, so the kind 'outside' is the very object compared here"
        for line in (
            'if found.kind == "outside":',
            'return Judged(graded, noted, found, numbers | ({"disturbed": True} if found.kind == "outside" else {}))',
        )
    },
    (
        "engine/trust/settle.py",
        "core/ReplaceComparisonOperator_IsNot_NotEq",
        'if isinstance(unseen, dict) and unseen.get("worked") is not False:',
    ): "unseen.unseen_user stores `worked` as True, False or None only (JSON keeps them so): for those three, "
    "`!= False` and `is not False` agree (they differ only on 0 or 0.0)",
    (
        "engine/facts/settings.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        'if rule.name == "torch threads" and any(f.name == "OMP_NUM_THREADS" for f in found):',
    ): "rule.name and every f.name are the table's own name constants of this module, identifier-like strings "
    "the compiler interns: each is the very object of the literal it is compared with",
    (
        "engine/facts/settings.py",
        "core/ReplaceBinaryOperator_BitOr_BitXor",
        'return kinds | ({HOST_LINK} if params.get("bound") == "link" else set())',
    ): "kinds is {CPU} here, disjoint from {HOST_LINK}: their symmetric difference is their union",
    (
        "engine/trust/cause.py",
        "core/ReplaceComparisonOperator_NotEq_IsNot",
        "return graded != Status.PASS",
    ): "every caller passes a Status member (events.py decodes a stored status to Status); an Enum's members are "
    "single objects, so `is not` and `!=` agree",
    (
        "engine/trust/cause.py",
        "core/ReplaceTrueWithFalse",
        "texts, steps = zip(*(split_reason(r) for r in c.outside), strict=True)",
    ): "zip's inputs are split_reason's pairs, every one of length 2: strict has nothing to check",
    (
        "engine/trust/cause.py",
        "core/ReplaceComparisonOperator_Eq_LtE",
        'if c.clock_ratio is not None and c.clock_ratio < 0.9 and bound == "compute":',
    ): "the bounds the stages write are compute, host, link (returned above) and memory: none sorts before "
    "'compute', so <= is ==",
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
    (
        "engine/trust/history.py",
        "core/ReplaceComparisonOperator_Is_GtE",
        "return trust_in(m.conditions) is Trust.TRUSTED and whole(m)",
    ): "clean() is called only where judgeable() let a TRUSTED or SUSPECT figure through: 'SUSPECT' sorts before "
    "'TRUSTED', so >= is `is`",
    (
        "engine/trust/history.py",
        "core/NumberReplacer",
        "def history_verdict(m: Measurement, earlier: list[Past], stage: str, band: float = 0.0) -> Verdict | None:",
    ): "the band is only read as max(DRIFT, band): any default at or below DRIFT (0.0, -1.0) gives 10%",
    (
        "engine/trust/history.py",
        "core/NumberReplacer",
        "declared = band(m) if band is not None and host_bound(m) else 0.0  # only a host-bound figure uses it",
    ): "history_verdict reads the band only as max(DRIFT, band), and only for a host-bound figure: any value at or "
    "below DRIFT here gives 10%",
    (
        "engine/trust/history.py",
        "core/ReplaceComparisonOperator_NotEq_IsNot",
        "if not clean(m) and found.status != Status.INCONCLUSIVE:",
    ): "judge() gives Status.INCONCLUSIVE or the Status.WARN it was handed: enum members, so is not is !=",
    (
        "engine/trust/history.py",
        "core/ReplaceComparisonOperator_Eq_Is",
        "if drift < 0 or found.status == Status.INCONCLUSIVE:",
    ): "judge() gives Status.INCONCLUSIVE or the Status.WARN it was handed: enum members, so is is ==",
}
