"""The trust policy: the thresholds that decide when other processes, clocks or spread make a figure untrustworthy."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrustPolicy:
    # Other processes interfere with a figure when they and the figure's own threads together want (nearly)
    # every CPU rigcheck may use, and they took a real share of them: the floor. The floor is 5% of the
    # figure's threads, and at least half a CPU on a set of 16 CPUs or more, less on a smaller set (on 2 CPUs
    # one burner that got 0.49 of a CPU halved a 2-thread figure). A process busy through the whole window
    # at 0.4 of a CPU or more (a burner beside a figure on every CPU gets more; a daemon's blips less)
    # counts whatever the floor: one such on 128 CPUs stalls a 128-thread product at every barrier.
    # "Nearly": on a saturated host a thread that has its CPU still shares its core with a busy sibling
    # (an H200 host with 32 burners on 32 CPUs slowed a small-batch GPU figure by 22% at 0.98 of a CPU).
    others_cpus_min: float = 0.5
    floor_full_set_cpus: int = 16  # the set size from which the floor is the whole others_cpus_min
    # a quiet CPU's own background (interrupts, kernel threads, a test harness) read 0.05-0.08 of a CPU on a set
    # of one with nothing else on it (2026-12-03); a real neighbour on that CPU takes about half of it
    others_cpus_background: float = 0.1
    others_share_of_threads: float = 0.05
    steady_cpus_min: float = 0.4
    saturation_slack_cpus: float = 0.5
    clock_ratio_min: float = 0.85  # SM clock against its maximum, with no cause reported
    power_capped_clock_min: float = 0.90  # at the power cap, a clock this close to its max is the card's normal state
    power_limit_slack: float = 0.01  # a limit this close to the default is the default
    power_capped_clock_floor: float = 0.50  # at the default limit, a clock below this is not the load's doing
    reference_clock_min: float = 0.90  # against this GPU's own earlier clean runs of the same figure
    mem_clock_ratio_min: float = 0.90
    spread_max: float = 0.05  # interquartile range over median
    min_samples: int = 3  # fewer telemetry samples than this cannot judge a figure
    widen_s: float = 1.0  # a short figure's window is widened back to this long

    def floor(self, threads: float, cpus: float) -> float:
        """The least CPU time other processes must take to count, for a figure of `threads` on `cpus`."""
        by_threads = self.others_share_of_threads * min(threads, cpus)
        by_set = self.others_cpus_min * min(1.0, cpus / self.floor_full_set_cpus)
        return max(by_threads, by_set, self.others_cpus_background)

    def interferes(self, others: float, threads: float, cpus: float, steady: bool = False, quota: bool = False) -> bool:
        """`quota`: the pool is a cgroup's CPU time, not CPUs, so no core is shared with a busy sibling."""
        taken = (steady and others >= self.steady_cpus_min) or others >= self.floor(threads, cpus)
        slack = 0.0 if quota else self.saturation_slack_cpus
        return taken and others + threads > cpus - slack

    def contended(self, others: float, cpus: float, steady: bool = False) -> bool:
        """Busy for a figure that wants every CPU (the CPU arms of the throughput stages do)."""
        return self.interferes(others, cpus, cpus, steady)


DEFAULT_POLICY = TrustPolicy()
