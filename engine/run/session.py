"""One run wired to its store and telemetry: what the CLI and the app both start, so none wires it twice."""

from __future__ import annotations

import sys
import time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import replace

from rigcheck.engine.events import Event, Facts, LogLine, Measurement, RunFinished, StageStarted, Status, Verdict
from rigcheck.engine.gate.full_run import health_history
from rigcheck.engine.hw.devices import nvml_index  # [unseen hook]
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.figures import annotate_figure
from rigcheck.engine.run.runner import Listener, Run, RunPlan
from rigcheck.engine.store import Store
from rigcheck.engine.store.errors import is_full
from rigcheck.engine.store.held import HeldWrites
from rigcheck.engine.store.history import earlier_clean_figures
from rigcheck.engine.store.reserve import END_RESERVE_NAME, SpaceReserve
from rigcheck.engine.store.run_end import run_end
from rigcheck.engine.telemetry.sample import Sample
from rigcheck.engine.telemetry.sampler import Sampler
from rigcheck.engine.trust.conditions import DEFAULT_POLICY, ConditionsAnnotator, TrustPolicy
from rigcheck.engine.trust.quiet import WAIT, HostBusy, busy_next_step, others_busy, wait_quiet
from rigcheck.engine.trust.unseen import UNLISTED_MIN  # [unseen hook]
from rigcheck.engine.trust.unseen_evidence import gpu_users  # [unseen hook]

SAMPLE_STORE_INTERVAL_S = 1.0
LOCK_PATIENCE_S = 1800.0  # how long a finished run waits for a locked store to take what it holds


def _say(line: str) -> None:
    print(f"rigcheck engine: {line}", file=sys.stderr, flush=True)


class RunSession:
    def __init__(
        self,
        store: Store,
        plan: RunPlan,
        listeners: Iterable[Listener] = (),
        sampler: Sampler | None = None,
        wait_quiet_s: float | None = None,
        policy: TrustPolicy = DEFAULT_POLICY,
        devices: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.plan = plan
        self.sampler = sampler
        self.wait_quiet_s = wait_quiet_s
        self.policy = policy
        self.devices = devices  # what this run holds: a figure taken while another run shares one says so
        self.store_error: str | None = None
        self._last_stored = 0.0
        self._conditions = ConditionsAnnotator(sampler, policy, self._earlier_clocks) if sampler else None
        self.run = Run(
            plan,
            [self._record, *listeners],
            annotate=self._annotate,
            before_stage=self._before_stage,
            before_end=self._before_end,
        )
        self.run.history = lambda m: earlier_clean_figures(store, plan.run_id, m)  # issue 32: drift from its own runs
        folder = store.log_dir(plan.run_id)  # the room is kept only where the owner made the run's folder
        keeps = folder.is_dir() and not store.read_only
        reserve = SpaceReserve.make(folder) if keeps else None
        # the end's own room: the held writes' reserve may be spent on a failing stage's results before the end
        self.end_room = SpaceReserve.make(folder, END_RESERVE_NAME) if keeps else None
        self.writes = HeldWrites(store, plan.run_id, reserve, self._store_failed, _say)
        self._missed_at_start = getattr(sampler, "missed", 0)
        self._stage = ""  # the stage running now: a drop of held results is that stage's finding
        self._ended_at: float | None = None  # when the run's last event was handed to the store
        self._health_facts: dict | None = None  # the health stage's GPUs, for their history (issue 33)

    def _earlier_clocks(self, measurement: Measurement) -> list[float]:
        uuid = str(measurement.params.get("gpu_uuid"))
        return self.store.earlier_clean_clocks(self.plan.run_id, measurement.name, uuid)

    def _annotate(self, measurement: Measurement) -> Measurement:
        """Telemetry conditions and the figure's one judgement, plus whether Verify has vouched for its device."""
        return annotate_figure(
            measurement,
            self.store,
            self.plan.run_id,
            self.devices,
            self._conditions,
            self.plan.request.device,
            # Verify's end may be held in memory while another process holds the store
            lambda: self.writes.held > 0 and self.run.stage_status.get("verify") in (Status.PASS, Status.WARN),
        )

    def _record(self, event: Event) -> None:
        if isinstance(event, StageStarted):
            self._stage = event.stage
            if self.sampler is not None:
                self.sampler.host.track(event.pid)  # its CPU use is rigcheck's own from the first sample
        if isinstance(event, Facts) and event.stage == "health":
            self._health_facts = event.data
        if isinstance(event, RunFinished):  # stored as the one rule ends a run (stopped on request: 130)
            ended = run_end(event.status, event.exit_code).exit_code  # always a code here: None only in a store's row
            event = replace(event, exit_code=event.exit_code if ended is None else ended)
            self._ended_at = time.monotonic()
        self.writes.event(event)  # now, or held in memory while another process holds the store

    def _store_failed(self, error: BaseException) -> None:
        """Disk full, store gone read-only or damaged (not a lock): end the run, say why."""
        if self.store_error is None:
            self.store_error = f"the store could not be written ({error}); the run was stopped"
            _say(self.store_error)
            full = is_full(error)
            self.run.fail(
                "stopped: the store's disk is full" if full else "stopped: the store failed",
                f"not run: the store could not be written ({'disk full' if full else error})",
            )

    def _on_sample(self, sample: Sample) -> None:
        if sample.t - self._last_stored >= SAMPLE_STORE_INTERVAL_S and self.store_error is None:
            self._last_stored = sample.t
            self.writes.sample(sample.t, sample.to_dict())

    def _before_end(self) -> Iterator[Event]:
        """Each GPU's health against its history (issue 33); a WARN, in the run, for what a long store lock made it
        drop (nothing is said when nothing was dropped)."""
        if self._health_facts is not None:
            yield from health_history(self.store, self._health_facts, self.plan.run_id)
        dropped = self.writes.dropped
        if not dropped:
            return
        missed = getattr(self.sampler, "missed", 0) - self._missed_at_start
        yield Verdict(
            self._stage or self.plan.request.stages[-1].name,
            "store-lock",
            Status.WARN,
            f"another process held the store for {self.writes.locked_for():.0f} s: {dropped['samples']} telemetry "
            f"samples and {dropped['events']} progress or log events beyond what is kept in memory were dropped "
            "(every figure and verdict was kept); the contention report has gaps",
            {
                "dropped_samples": dropped["samples"],
                "dropped_events": dropped["events"],
                "locked_s": round(self.writes.locked_for(), 1),
                "sampler_missed_ticks": missed,
            },
        )

    def _before_stage(self, info: StageInfo) -> Iterator[Event]:
        if not info.throughput or self.sampler is None:
            return
        yield from self._gpu_users(info)  # [unseen hook, issue 31 item 6]
        waited = (yield from self._wait_quiet(info)) if self.wait_quiet_s else None
        busy_now = others_busy(self.sampler, 1.0)
        contended = busy_now is not None and busy_now.contended(self.policy)
        gave_up = waited is not None and not waited[0]
        if not contended and not gave_up and waited is None:
            return
        numbers: dict[str, object] = {}
        if busy_now is not None:
            numbers |= {"others_cpus": round(busy_now.others, 2), "cpus": busy_now.cpus}
        words = ""
        if waited is not None:
            numbers |= {"waited_s": round(waited[1], 1), "wait_quiet_s": self.wait_quiet_s, "gave_up": gave_up}
            words = f"waited {waited[1]:.0f} s for a quiet host (--wait-quiet {self.wait_quiet_s:g})"
            words += " and gave up; " if gave_up else ""
        if contended or gave_up:
            now = busy_now if contended or waited is None or waited[2] is None else waited[2]
            said = now.describe() if now is not None else "no reading"
            yield Verdict(
                info.name,
                "quiet-check",
                Status.WARN,
                f"{words}host busy before the stage: {said}; figures that need those CPUs "
                f"will be marked SUSPECT; {busy_next_step(waited[1] if gave_up and waited else None)}",
                numbers,
            )
        else:
            yield Verdict(info.name, "quiet-check", Status.PASS, f"{words}: the host was quiet", numbers)

    def _gpu_users(self, info: StageInfo) -> Iterator[Event]:
        """[unseen hook, issue 31 item 6: engine/trust/unseen_evidence.py] Every other user of the run's GPUs,
        named before the stage even when it only holds memory: it may start work at any moment."""
        assert self.sampler is not None
        indexes = {i for i in (nvml_index(d) for d in self.devices) if i is not None}
        now = time.time()
        users = gpu_users(self.sampler.window(now - 1.0, now), indexes, UNLISTED_MIN)
        if users:
            words = "; ".join(users)
            yield Verdict(
                info.name,
                "gpu-users",
                Status.WARN,
                f"other users of the GPU before the stage: {words}; a figure measured while one works is SUSPECT, "
                "one that only holds memory leaves it TRUSTED with a note; next: `nvidia-smi` (on the host, "
                "outside any container) names them",
                {"gpu_users": users},
            )

    def _wait_quiet(self, info: StageInfo) -> Generator[Event, None, tuple[bool, float, HostBusy | None]]:
        """Wait for a quiet host, saying what it waits for (level `wait`: the CLI and `follow` print it on stderr)."""
        assert self.sampler is not None and self.wait_quiet_s
        yield LogLine(info.name, f"waiting up to {self.wait_quiet_s:g} s for a quiet host before {info.name}", WAIT)
        waiter = wait_quiet(self.sampler, self.wait_quiet_s, policy=self.policy, stop=self.run.stage_cancelled)
        start = time.monotonic()
        while True:
            try:
                busy = next(waiter)
            except StopIteration as stop:
                quiet, waited, last = stop.value
                break
            yield LogLine(info.name, f"still waiting ({time.monotonic() - start:.0f} s): {busy.describe()}", WAIT)
        state = "quiet" if quiet else "gave up, still busy: " + (last.describe() if last else "no reading")
        yield LogLine(info.name, f"waited {waited:.1f} s for a quiet host: {state}", WAIT)
        return quiet, waited, last

    def start(self) -> None:
        if self.sampler is not None:
            self.sampler.add_listener(self._on_sample)
        self.run.start()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the run has ended and everything it produced is in the store (or LOCK_PATIENCE_S of a
        lock after its end has passed: then what is still held is lost, and the run is an error)."""
        done = self.run.wait(timeout)
        if done and self.sampler is not None:
            self.sampler.remove_listener(self._on_sample)
        if not done:
            return False
        if self.writes.drained(LOCK_PATIENCE_S if timeout is None else timeout):
            return True
        if self._ended_at is None:
            self._ended_at = time.monotonic()
        if time.monotonic() - self._ended_at < LOCK_PATIENCE_S:
            return False
        lost = self.writes.close()
        self.store_error = self.store_error or (
            f"the store stayed locked by another process for {LOCK_PATIENCE_S:.0f} s after the run's end; "
            f"{lost} results held in memory could not be written"
        )
        _say(self.store_error)
        return True

    def room_for_the_end(self) -> None:
        """Give back the room kept for the run's end, just before the end is written."""
        if self.end_room is not None:
            self.end_room.release()

    def close(self) -> None:
        """The run is over and stored: give the disk back the room kept for its end."""
        self.room_for_the_end()
        self.writes.close()

    def cancel(self, reason: str = "") -> None:
        self.run.cancel(reason)


def settle_s(interval: float) -> float:
    """How long a new sampler runs before the first stage asks for samples: a few of them."""
    return min(0.3, 3 * interval)


def start_sampler(interval: float = 0.1, settle: bool = True) -> Sampler:
    """A started sampler; `settle`: after its first few samples (OwnedRun waits for them later, in start)."""
    sampler = Sampler(interval=interval).start()
    if settle:
        time.sleep(settle_s(interval))
    return sampler
