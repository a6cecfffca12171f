"""Issue 31, item 6: a process that only holds GPU memory leaves figures TRUSTED, but it is still named before
each throughput stage (a WARN `gpu-users` verdict), since it may start work at any moment; so is memory that
a process rigcheck cannot see holds. A GPU with no other user gets no such verdict."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from fakes import FakeSampler
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import RunPlan
from rigcheck.engine.run.session import RunSession
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample
from rigcheck.engine.trust.unseen import UNLISTED_MIN
from rigcheck.engine.trust.unseen_evidence import gpu_users
from stage_infos import fake

GIB = 2**30
HOLDER = ProcessUse(5151, "holder", gpu_memory=120 * GIB)


def gpu(*processes: ProcessUse, unlisted: int = 0, unseen: tuple[int, ...] = ()) -> GpuSample:
    return GpuSample(
        index=0, name="NVIDIA H200", vendor="NVIDIA", source="nvml", pci_bus_id="0000:18:00.0",
        processes=processes, sm_by_pid=(), memory_unlisted=unlisted, unseen_pids=unseen,
    )  # fmt: skip


def test_every_other_user_is_named_in_words() -> None:
    host = HostSample(cpus=8, load1=0.0, busy_cpus=0.0, own_cpus=0.0, own_pids=(4242,))
    own = ProcessUse(4242, "python", gpu_memory=GIB)
    assert gpu_users([Sample(1.0, host, (gpu(own),))], {0}, UNLISTED_MIN) == []
    assert gpu_users([Sample(1.0, host, (gpu(own, HOLDER),))], {0}, UNLISTED_MIN) == [
        "GPU 0 (0000:18:00.0): holder (pid 5151) holds 120.0 GiB, SM 0% in the last second"
    ]
    assert gpu_users([Sample(1.0, host, (gpu(own, HOLDER),))], {1}, UNLISTED_MIN) == []  # not this run's GPU
    hidden = gpu(own, replace(HOLDER, name="?"), unlisted=874 * 2**20, unseen=(5151,))
    assert gpu_users([Sample(1.0, host, (hidden,))], {0}, UNLISTED_MIN) == [
        "GPU 0 (0000:18:00.0): a process in another PID namespace (pid 5151) holds 120.0 GiB, SM 0% in the last "
        "second; a process that rigcheck cannot see (another container or PID namespace) holds 874 MiB"
    ]
    blind = gpu(unlisted=874 * 2**20)  # no list shows rigcheck's own either: the memory may be its own
    assert gpu_users([Sample(1.0, host, (blind,))], {0}, UNLISTED_MIN) == []
    below = gpu(own, unlisted=UNLISTED_MIN - 1)
    assert gpu_users([Sample(1.0, host, (below,))], {0}, UNLISTED_MIN) == []


class LiveGpu(FakeSampler):
    """Samples every 0.1 s up to now of a quiet host whose GPU 0 holds these processes."""

    def __init__(self, *processes: ProcessUse) -> None:
        super().__init__([])
        self.gpu = gpu(*processes)

    def window(self, t0: float, t1: float) -> list[Sample]:
        host = HostSample(cpus=8, load1=0.0, busy_cpus=0.0, own_cpus=0.0)
        now = time.time()
        return [Sample(t, host, (self.gpu,)) for t in (now - i * 0.1 for i in range(30)) if t0 <= t <= t1]


def run_beside(tmp_path: Path, sampler: LiveGpu) -> list[dict]:
    store = Store(tmp_path / "s.db")
    info = replace(fake("timed"), throughput=True)
    run_id = store.begin_run([info.name], "cuda:0", "quick", sys.executable, [])
    plan = RunPlan(run_id, RunRequest((info,)), tmp_path / "logs")
    session = RunSession(store, plan, [], sampler=sampler, devices=("cuda:0",))
    session.start()
    assert session.wait(120)
    report = store.report(run_id)
    assert report is not None
    return [v for v in report["verdicts"] if v["check_name"] == "gpu-users"]


def test_an_idle_holder_is_named_before_the_stage(tmp_path: Path) -> None:
    (verdict,) = run_beside(tmp_path, LiveGpu(HOLDER))
    assert verdict["status"] == "WARN"
    assert verdict["explanation"].startswith(
        "other users of the GPU before the stage: GPU 0 (0000:18:00.0): holder (pid 5151) holds 120.0 GiB, SM 0% in "
        "the last second; a figure measured while one works is SUSPECT"
    )


def test_a_gpu_with_no_other_user_gets_no_such_verdict(tmp_path: Path) -> None:
    assert run_beside(tmp_path, LiveGpu()) == []
