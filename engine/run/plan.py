"""What a run carries out: its request with its id and log folder (RunPlan), and each stage's children (one per
device, in batches run one after another)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.trust.peers import PEER_TOLERANCE


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
