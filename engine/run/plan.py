"""What a run carries out: its request with its id and log folder (RunPlan), and each stage's children (one per
device, in batches run one after another)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.trust.peers import PEER_TOLERANCE

# What each profile promises, with the time it took on a GPU host, measured (bench/RESULTS.md): `run --help`
# and the README say it. Issue 42 aims at 15 s and 40 s on every GPU machine; its figures replace these once
# bench/profile_times.sh has run there (<!-- filled from bench/RESULTS.md -->).
PROFILE_WORDS = {
    "quick": "one figure of every kind the default judges, at one size: 24-26 s wall on one H200 (2026-12-01); "
    "19-28 s on H100s (2026-12-06)",
    "standard": "the default: every stage but burn, at three sizes: 47-54 s wall on one H200 (2026-12-01/03); "
    "53-58 s on an H100 with a slower host CPU (2026-12-06)",
    "full": "larger sizes and burn (--duration, 300 s by default): many minutes",
}


def profile_help() -> str:
    """`--profile`'s help: each profile, what it runs and how long it took on a GPU host."""
    return "; ".join(f"{name}: {words}" for name, words in PROFILE_WORDS.items())


@dataclass(frozen=True)
class RunPlan:
    """One request as the runner carries it out: the request itself, the run's id in the store and its log folder."""

    run_id: int
    request: RunRequest
    log_dir: Path = Path(".")

    @property
    def peer_tolerance(self) -> float:
        """The request's tolerance between peer GPUs, else the runner's default."""
        tolerance = self.request.peer_tolerance
        return PEER_TOLERANCE if tolerance is None else tolerance


@dataclass(frozen=True)
class Child:
    """One stage child: the device it measures, options added to the run's, and its log file's name."""

    device: str
    options: tuple[tuple[str, object], ...] = ()
    log_suffix: str = ""

    def log_path(self, log_dir: Path, stage: str) -> Path:
        return log_dir / f"{stage}{self.log_suffix}.log"


def stage_batches(info: StageInfo, plan: RunPlan) -> list[list[Child]]:
    """The children of one stage, in batches run one after another; the children of a batch run at once.

    A per-device stage on several GPUs gets one child per GPU (all at once, or one by one with
    `serial`), then, where it has host work that does not depend on the GPU, one CPU child after them.
    """
    request = plan.request
    if not (info.per_device and len(request.gpus) > 1):
        return [[Child(request.device)]]
    gpus = [Child(gpu, (("parts", "gpu"),), "-" + gpu.replace(":", "")) for gpu in request.gpus]
    batches = [[child] for child in gpus] if request.serial else [gpus]
    if info.cpu_part:
        batches.append([Child("cpu", (("parts", "cpu"),), "-cpu")])
    return batches
