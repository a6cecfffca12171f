"""The one codec at both process boundaries: every field of a request comes back, a bad payload is one error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest
from rigcheck.engine.exits import EXIT_USAGE
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run import engine_main
from rigcheck.engine.run.codec import CodecError
from rigcheck.engine.run.order import StageOrder
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.stage import StageSpec

STAGE = StageInfo(
    "matmul",
    "pkg.mod:run",
    "a summary",
    {"quick": 1.5, "full": 9.0},
    ("/opt/extra",),
    fingerprint=False,
    throughput=True,
    per_device=True,
    cpu_part=True,
    default_in=("full",),
    timed=True,
    min_gpus=2,
    fresh_child=True,
    figure_kinds=("blas", "alloc"),
)
REQUEST = RunRequest(
    stages=(STAGE, StageInfo("probe", "pkg.probe:run", "probe")),
    device="all",
    profile="full",
    python="/usr/bin/python3",
    gpus=("cuda:0", "cuda:1"),
    options={"duration": 5, "sizes": [1, 2], "mode": "x", "flag": True, "nested": {"a": None}},
    timeout_s=12.5,
    serial=True,
    peer_tolerance=0.2,
    wait_quiet_s=3.0,
    telemetry=False,
    argv=("run", "--device", "all"),
    force=True,
    cold=True,
    strict=True,
)


def default_of(field: Any) -> Any:
    return field.default_factory() if field.default_factory is not MISSING else field.default


@pytest.mark.parametrize("obj", [REQUEST, STAGE])
def test_the_example_sets_every_field_away_from_its_default(obj: Any) -> None:
    """So the round trip below proves every field crosses, not only those a default would hide."""
    at_default = [f.name for f in fields(obj) if getattr(obj, f.name) == default_of(f)]
    assert at_default == []


def test_a_request_comes_back_with_every_field_and_its_types() -> None:
    back = RunRequest.from_json(REQUEST.to_json())
    assert back == REQUEST
    assert {f.name: getattr(back, f.name) for f in fields(back)} == {
        f.name: getattr(REQUEST, f.name) for f in fields(REQUEST)
    }
    assert isinstance(back.stages, tuple) and all(isinstance(s, StageInfo) for s in back.stages)
    assert isinstance(back.gpus, tuple) and isinstance(back.argv, tuple)
    assert isinstance(back.stages[0].extra_paths, tuple) and isinstance(back.stages[0].default_in, tuple)


def test_a_stage_order_comes_back_as_the_child_needs_it() -> None:
    spec = StageSpec("matmul", "cuda:1", "quick", (("duration", 5.0), ("parts", "gpu"), ("sizes", [1, 2])))
    order = StageOrder(spec, "pkg.mod:run", fingerprint=False)
    back = StageOrder.from_json(order.to_json())
    assert back == order
    assert back.spec.option("parts") == "gpu" and back.spec.options[0] == ("duration", 5.0)


BAD = {
    "not JSON": "{not json",
    "not an object": "[1, 2]",
    "no data": json.dumps({"kind": "RunRequest"}),
    "another kind": StageOrder(StageSpec("probe"), "m:f").to_json(),
    "a wrong type": json.dumps({"kind": "RunRequest", "data": {"stages": [], "device": 3}}),
    "an unknown field": json.dumps({"kind": "RunRequest", "data": {"stages": [], "colour": "red"}}),
    "a missing field": json.dumps({"kind": "RunRequest", "data": {"device": "cpu"}}),
    "a bad stage": json.dumps({"kind": "RunRequest", "data": {"stages": [{"name": "x"}]}}),
    "a bad tuple": json.dumps({"kind": "RunRequest", "data": {"stages": [], "gpus": "cuda:0"}}),
}


@pytest.mark.parametrize("payload", BAD.values(), ids=BAD.keys())
def test_a_bad_or_foreign_payload_is_one_clear_error(payload: str) -> None:
    with pytest.raises(CodecError) as caught:
        RunRequest.from_json(payload)
    message = str(caught.value)
    assert message and "\n" not in message and "RunRequest" in message


def test_the_error_names_the_field() -> None:
    with pytest.raises(CodecError, match=r"RunRequest\.device: want str, got a number"):
        RunRequest.from_json(BAD["a wrong type"])
    with pytest.raises(CodecError, match=r"RunRequest\.stages\[0\]: missing field\(s\) target, summary"):
        RunRequest.from_json(BAD["a bad stage"])


def test_the_engine_answers_a_bad_request_in_one_line(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    code = engine_main.main([str(tmp_path / "store.db"), str(write_fd), BAD["another kind"]])
    with os.fdopen(read_fd, "rb") as answer:
        error = json.loads(answer.read())["error"]
    assert code == EXIT_USAGE
    assert "could not read the run's request" in error and "StageOrder" in error
    assert not (tmp_path / "store.db").exists()  # refused before any run began


def test_a_stage_child_refuses_a_bad_order_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.engine.run.child", "1", REQUEST.to_json()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.strip().splitlines() == [
        "rigcheck child: a 'RunRequest' payload where a StageOrder was expected"
    ]
