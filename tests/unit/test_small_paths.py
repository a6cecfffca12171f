"""Paths that are easy to leave untested: waiting for a quiet host, a batch that does not fit, result details."""

from __future__ import annotations

import time

import torch
from fakes import FakeSampler
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.report.rows import detail_text
from rigcheck.engine.stages import training
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.engine.trust.quiet import HostBusy, wait_quiet


class LiveHost(FakeSampler):
    """Samples every 0.1 s up to now, with a fixed load by other processes."""

    def __init__(self, others: float) -> None:
        super().__init__([])
        self.others = others
        self.top: tuple[ProcessUse, ...] = ()

    def window(self, t0: float, t1: float) -> list[Sample]:
        host = HostSample(cpus=8, load1=1.0, busy_cpus=self.others, own_cpus=0.0, top_others=self.top)
        now = time.time()
        return [Sample(t, host) for t in (now - i * 0.1 for i in range(100)) if t0 <= t <= t1]


def wait_quiet_blocking(sampler, max_wait_s: float, **kwargs) -> tuple[bool, float, HostBusy | None]:  # type: ignore[no-untyped-def]
    """wait_quiet, not listening to what it says it waits for."""
    waiter = wait_quiet(sampler, max_wait_s, **kwargs)
    while True:
        try:
            next(waiter)
        except StopIteration as stop:
            return stop.value


def test_wait_quiet_returns_soon_on_a_quiet_host() -> None:
    quiet, waited, busy = wait_quiet_blocking(LiveHost(0.2), max_wait_s=5.0, quiet_for_s=0.5)
    assert quiet and waited < 2.0 and busy is not None and busy.others == 0.2


def test_wait_quiet_gives_up_on_a_busy_host_and_says_what_it_waits_for() -> None:
    host = LiveHost(1.0)
    host.top = (ProcessUse(4242, "burner", cpus=1.0),)
    waiter = wait_quiet(host, max_wait_s=1.0, quiet_for_s=0.5, say_every_s=0.1)
    said = []
    while True:
        try:
            said.append(next(waiter).describe())
        except StopIteration as stop:
            quiet, waited, busy = stop.value
            break
    assert not quiet and waited >= 1.0 and busy is not None and busy.others == 1.0
    assert said and said[0] == "other processes keep 1.0 of 8 CPUs busy: burner (pid 4242, 1.0 CPUs)"


def test_a_batch_that_does_not_fit_is_skipped_with_the_reason(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def too_big(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    monkeypatch.setattr(training, "train_rate", too_big)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    (verdict,) = list(training.one(128, 65536, "fp32", torch.device("cpu")))
    assert isinstance(verdict, Verdict) and verdict.status == Status.SKIP
    assert "does not fit" in verdict.explanation and "Tried to allocate 80.00 GiB" in verdict.explanation


def test_result_detail_shows_conditions_and_reasons() -> None:
    text = detail_text(
        {
            "kind": "measurement",
            "stage": "matmul",
            "name": "matmul bf16 8192",
            "value": 682.3,
            "unit": "TFLOP/s",
            "device": "cuda:0",
            "conditions": {
                "trust": "SUSPECT",
                "trust_reasons": ["SM clock at 76% of max: power cap"],
                "sm_clock_mean_mhz": 1447.5,
                "verified": False,
                "notes": ["power-limited at 700 W, normal for this load"],
            },
        }
    )
    assert "trust: SUSPECT: SM clock at 76% of max: power cap" in text
    assert "note: power-limited at 700 W, normal for this load" in text
    assert "SM clock mean 1,448 MHz" in text and "verified: no" in text
    clean = detail_text(
        {"kind": "measurement", "stage": "m", "name": "x", "value": 1.0, "unit": "u", "device": "cpu", "conditions": {}}
    )
    assert "trust: no telemetry" in clean and "note:" not in clean and "conditions: none recorded" in clean


def test_a_missing_gpu_is_one_fail_verdict_and_no_work() -> None:
    from rigcheck.engine.stage import StageContext, StageSpec
    from rigcheck.engine.stages import bandwidth
    from rigcheck.engine.stages.hostbugs import stage as hostbugs
    from rigcheck.engine.stages.matmul import stage as matmul
    from rigcheck.engine.stages.verify import stage as verify

    missing = f"cuda:{torch.cuda.device_count() + 3}"
    for stage in (verify, matmul, bandwidth, training):
        events = list(stage.run(StageContext(StageSpec(stage.STAGE, missing, "quick"))))
        assert [(type(e).__name__, getattr(e, "status", None)) for e in events] == [("Verdict", Status.FAIL)]
        assert "torch sees" in events[0].explanation
    host = list(hostbugs.run(StageContext(StageSpec("hostbugs", missing, "quick"))))
    assert host[0].status == Status.FAIL and host[-1].check == "summary"  # the host checks still run


def test_tf32_needs_a_cuda_device_of_compute_capability_8() -> None:
    from rigcheck.engine.stages.common.devices import has_tf32

    assert has_tf32(torch.device("cpu")) is False
