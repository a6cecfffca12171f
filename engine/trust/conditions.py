"""The conditions a figure was measured under (clocks, heat, power, host load, other processes), gathered from the
sampler's ring buffer, and the figure's judgement from the one judge (engine/trust/judge.py) stored beside them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.settings import InForce, affecting, in_force, read_host
from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.telemetry.sample import Sample
from rigcheck.engine.trust import unseen, unseen_evidence  # [unseen hook]
from rigcheck.engine.trust.clocks import GPU_BUSY_PCT, power_limit_state
from rigcheck.engine.trust.cpu_load import _size, cpu_contention, cpu_pools, rest_words
from rigcheck.engine.trust.judge import SLOWDOWN_REASONS, judge, judge_untimed
from rigcheck.engine.trust.judgement import Judgement
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy
from rigcheck.engine.trust.summary import (
    NAMED_CPUS_MIN,
    busiest_others,
    gpu_index_for,
    listed_others,
    steady_others,
    summarise,
)

__all__ = [
    "DEFAULT_POLICY",
    "GPU_BUSY_PCT",
    "NAMED_CPUS_MIN",
    "SLOWDOWN_REASONS",
    "ConditionsAnnotator",
    "Judgement",
    "TrustPolicy",
    "_size",
    "busiest_others",
    "cpu_contention",
    "cpu_pools",
    "gpu_index_for",
    "judge",
    "judge_untimed",
    "listed_others",
    "nvml_index",
    "power_limit_state",
    "rest_words",
    "stamp",
    "steady_others",
    "summarise",
]

ReferenceClocks = Callable[[Measurement], list[float]]


class ConditionsAnnotator:
    """Fills a measurement's conditions and trust verdict from the sampler's ring buffer."""

    def __init__(
        self,
        sampler: Any,
        policy: TrustPolicy = DEFAULT_POLICY,
        reference_clocks: ReferenceClocks | None = None,
        settings: list[InForce] | None = None,
    ) -> None:
        self.sampler = sampler
        self.policy = policy
        self.reference_clocks = reference_clocks
        self.settle_s = sampler.interval * 1.2
        # the stage children inherit this process's environment: its settings are theirs
        self.settings = in_force(os.environ, read_host()) if settings is None else settings

    def window(self, start: float, end: float) -> tuple[list[Sample], bool]:
        """The samples inside [start, end], and whether the window was too short to hold enough and was
        widened back in time (then it holds the work before the figure too)."""
        samples = self.sampler.window(start, end)
        if len(samples) < self.policy.min_samples and end - start < self.policy.widen_s:
            return self.sampler.window(end - self.policy.widen_s, end), True
        return samples, False

    def __call__(self, measurement: Measurement, shared_runs: Sequence[int] = ()) -> Measurement:
        """The figure with its conditions and its one judgement; `shared_runs`: other runs on its device (--force)."""
        end = measurement.t
        if time.time() < end + self.settle_s:
            time.sleep(max(0.0, end + self.settle_s - time.time()))  # let the closing sample land
        start = measurement.t_start if measurement.t_start is not None else end
        samples, widened = self.window(start, end)
        conditions = summarise(samples, gpu_index_for(measurement, samples))
        if not conditions:
            conditions = {"samples": 0, "window_s": 0.0}
        # the window's own facts, written where they are gathered (the judgement's keys are written by `stamp`)
        conditions.update(widened=widened)
        subject = affecting(self.settings, measurement.stage, measurement.device, measurement.params)
        if subject:
            conditions.update(settings=[setting.as_dict() for setting in subject])
        references = None
        if self.reference_clocks is not None and measurement.params.get("gpu_uuid"):
            references = self.reference_clocks(measurement)
        # [unseen hook, issue 31: engine/trust/unseen.py] unseen users, idle holders, a short figure's span clocks
        before = self.sampler.window(start - unseen_evidence.LOOKBACK_S, start)
        conditions.update(unseen_evidence.gather(samples, before, conditions.get("gpu_index"), start))
        found = unseen.examine(conditions, measurement.params, measurement.device)
        conditions.update(found.stored)
        # [end unseen hook]
        judgement = judge(found.view, measurement, self.policy, references, found, shared_runs)
        return stamp(measurement, conditions, judgement, shared_runs)


def stamp(
    measurement: Measurement,
    conditions: dict[str, Any],
    judgement: Judgement | None,
    shared_runs: Sequence[int] = (),
) -> Measurement:
    """The figure with its conditions and judgement stored: the one place a figure's trust is written."""
    out = dict(conditions)
    if shared_runs:
        out["other_runs_on_device"] = list(shared_runs)
    if judgement is not None:
        out.update(judgement.stored())
    return replace(measurement, conditions=out)
