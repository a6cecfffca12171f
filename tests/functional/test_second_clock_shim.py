"""A fault that slows the whole monotonic clock family in a stage child (CLOCK_MONOTONIC, which
perf_counter reads, and CLOCK_MONOTONIC_RAW together) breaks its CPU figures, naming the clocks'
disagreement: the second clock, CLOCK_REALTIME, is outside that family. Without the fault the same
run is clean. The fault is an LD_PRELOAD shim around clock_gettime, built here with gcc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ci_tools import need
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.trust.conditions import judge

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

/* Both monotonic clocks run at half speed from the moment the library loads; every other clock is real. */
typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock_gettime;
static int64_t anchor[2];

static int64_t ns(const struct timespec *ts) { return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec; }

__attribute__((constructor)) static void start(void) {
    struct timespec ts;
    real_clock_gettime = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
    real_clock_gettime(CLOCK_MONOTONIC, &ts);
    anchor[0] = ns(&ts);
    real_clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    anchor[1] = ns(&ts);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (!real_clock_gettime) start();
    int rc = real_clock_gettime(id, ts);
    if (rc != 0 || (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW)) return rc;
    int64_t base = anchor[id == CLOCK_MONOTONIC ? 0 : 1];
    int64_t slowed = base + (ns(ts) - base) / 2;
    ts->tv_sec = slowed / 1000000000LL;
    ts->tv_nsec = slowed % 1000000000LL;
    return rc;
}
"""

STAGE_PY = '''
"""A real CPU matmul figure, timed and checked as the matmul stage times and checks its CPU figures."""

import torch
from rigcheck.engine.events import Measurement
from rigcheck.engine.stages.common.figures import checked
from rigcheck.engine.stages.common.timing import time_calls


def cpu_matmul(context):
    a = torch.randn(256, 256)
    stats = time_calls(lambda: a @ a, torch.device("cpu"), min_reps=10, min_seconds=0.2)
    params = {"dtype": "fp32", "bound": "host", "threads": torch.get_num_threads()}
    value = 2.0 * 256**3 / stats.median / 1e9
    figure = Measurement(context.spec.stage, "matmul fp32 256", value, "GFLOP/s", 0.0, len(stats.times), "cpu", params)
    yield from checked(figure, stats, None)
'''

PROBE_PY = """
import json, time
t0, r0, w0 = time.perf_counter(), time.clock_gettime(time.CLOCK_MONOTONIC_RAW), time.clock_gettime(time.CLOCK_REALTIME)
while time.clock_gettime(time.CLOCK_REALTIME) - w0 < 0.3:
    pass
wall = time.clock_gettime(time.CLOCK_REALTIME) - w0
perf, raw = time.perf_counter() - t0, time.clock_gettime(time.CLOCK_MONOTONIC_RAW) - r0
print(json.dumps({"perf": perf / wall, "raw": raw / wall}))
"""


@pytest.fixture(scope="module")
def slow_clocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shim, built and shown to slow both monotonic clocks in a child Python, not the wall clock."""
    need("gcc")  # skips where missing; under CI=true, where .ci/run installs it, fails
    gcc = shutil.which("gcc") or "gcc"
    folder = tmp_path_factory.mktemp("shim")
    (folder / "slowclock.c").write_text(SHIM_C)
    library = folder / "slowclock.so"
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O2", "-o", str(library), str(folder / "slowclock.c"), "-ldl"],
        check=True,
        capture_output=True,
    )
    env = dict(os.environ, LD_PRELOAD=str(library))
    probe = subprocess.run([sys.executable, "-c", PROBE_PY], env=env, capture_output=True, text=True, timeout=60)
    rates = json.loads(probe.stdout)
    assert 0.4 < rates["perf"] < 0.6 and 0.4 < rates["raw"] < 0.6, rates  # the shim works on perf_counter itself
    return library


def run_stage(tmp_path: Path, name: str) -> list[Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "clock_stage.py").write_text(textwrap.dedent(STAGE_PY))
    info = StageInfo(
        name,
        "clock_stage:cpu_matmul",
        "a CPU matmul figure",
        {"quick": 240.0},
        extra_paths=(str(tmp_path),),
        fingerprint=False,
    )
    heard: list[Any] = []
    run = Run(RunPlan(1, RunRequest((info,), "cpu", "quick"), tmp_path / "logs"), [heard.append])
    run.start()
    assert run.wait(300), "the stage child did not finish"
    return heard


def test_slowed_monotonic_clocks_break_cpu_figures_and_the_clean_run_is_clean(
    slow_clocks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = run_stage(tmp_path / "clean", "clockcheck")
    (figure,) = [e for e in clean if isinstance(e, Measurement)]
    assert figure.params["timer_check"] == "CLOCK_REALTIME" and figure.params["broken"] is None
    assert judge({"samples": 10}, figure).trust != "BROKEN"
    assert not [e for e in clean if isinstance(e, Verdict) and e.status == Status.FAIL]

    monkeypatch.setenv("LD_PRELOAD", str(slow_clocks))  # reaches the stage child, not this process
    faulty = run_stage(tmp_path / "faulty", "clockcheck")
    (figure,) = [e for e in faulty if isinstance(e, Measurement)]
    broken = figure.params["broken"] or ""
    assert broken.startswith("two host clocks disagree (perf_counter") and "CLOCK_REALTIME" in broken
    assert "the timer is broken" in broken
    assert judge({"samples": 10}, figure).trust == "BROKEN"
    (fail,) = [e for e in faulty if isinstance(e, Verdict) and e.status == Status.FAIL]
    assert "two host clocks disagree" in fail.explanation and "clocksource" in fail.explanation
