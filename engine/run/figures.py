"""The one annotation path of a figure, for a local run and for the fleet agent's inter-host figures alike: its
conditions and its judgement (engine/trust/judge.py, with another run on its device as an input), then whether
Verify has vouched for its device."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rigcheck.engine.events import Measurement
from rigcheck.engine.store import Store
from rigcheck.engine.trust.conditions import ConditionsAnnotator, judge_untimed, stamp


def annotate_figure(
    measurement: Measurement,
    store: Store,
    run_id: int,
    devices: Sequence[str],
    conditions: ConditionsAnnotator | None,
    default_device: str = "",
    verify_held: Callable[[], bool] = lambda: False,
) -> Measurement:
    """The figure as it is stored: conditions from telemetry (where there is a sampler), the one judgement, and
    `verified`. `devices`: what the run holds (a run sharing one, only with --force, makes the figure SUSPECT);
    `verify_held`: whether Verify's PASS is still held in memory, not yet in the store."""
    sharing = store.sharing_runs(run_id, tuple(devices)) if devices else []
    if conditions is not None:
        measurement = conditions(measurement, sharing)
    else:
        measurement = stamp(measurement, measurement.conditions, judge_untimed(sharing), sharing)
    verified = store.verified(run_id, measurement.device or default_device) or verify_held()
    return replace(measurement, conditions=measurement.conditions | {"verified": verified})
