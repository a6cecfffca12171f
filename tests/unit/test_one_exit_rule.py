"""One exit-code rule in the engine: `combine` ranks codes by the exit table's order, not by number, and --strict
(part of the run's request, stored with the run when it begins) makes a WARN fail the run for the CLI, a detached
run followed later, and a fleet agent alike."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rigcheck.engine.events import Status
from rigcheck.engine.exits import (
    EXIT_CRASH,
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    RANK,
    combine,
)
from rigcheck.engine.fleet import agent as agent_module
from rigcheck.engine.fleet.args import agent_parser
from rigcheck.engine.fleet.env import FleetEnv
from rigcheck.engine.fleet.handshake import NoNonce
from rigcheck.engine.registry import STAGES
from rigcheck.engine.report.failures import strict_code
from rigcheck.engine.run.options import request_from_args
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR, fake


def test_combine_ranks_by_the_table_not_by_number() -> None:
    """Seen failing on the old code, where the fleet agent took max(): max(3, 7) is 7 and max(1, 7) is 7."""
    assert combine([EXIT_CRASH, EXIT_INCONCLUSIVE]) == EXIT_CRASH
    assert combine([EXIT_INCONCLUSIVE, EXIT_FAIL]) == EXIT_FAIL
    assert combine([EXIT_OK, EXIT_INCONCLUSIVE]) == EXIT_INCONCLUSIVE
    assert combine([EXIT_FAIL, EXIT_CRASH]) == EXIT_CRASH
    assert combine([EXIT_CRASH, EXIT_ERROR, EXIT_INTERRUPTED]) == EXIT_INTERRUPTED
    assert combine([]) == EXIT_OK and combine([EXIT_OK]) == EXIT_OK
    assert combine([EXIT_FAIL, 99]) == 99  # a code from outside the table is never quieter than a FAIL
    assert len(set(RANK)) == len(RANK)


@pytest.mark.parametrize(
    ("code", "verdicts", "strict", "expected"),
    [
        (EXIT_OK, [Status.PASS, Status.WARN], True, EXIT_FAIL),
        (EXIT_OK, [Status.PASS, Status.WARN], False, EXIT_OK),
        (EXIT_OK, [Status.PASS], True, EXIT_OK),  # nothing to fail on
        (EXIT_INCONCLUSIVE, ["WARN", "INCONCLUSIVE"], True, EXIT_FAIL),
        (EXIT_CRASH, [Status.WARN, Status.CRASH], True, EXIT_CRASH),  # a crash outranks a strict WARN
        (EXIT_INTERRUPTED, [Status.WARN], True, EXIT_INTERRUPTED),
    ],
)
def test_strict_is_one_rule(code: int, verdicts: list, strict: bool, expected: int) -> None:  # type: ignore[type-arg]
    assert strict_code(code, verdicts, strict) == expected


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120")
    command = [sys.executable, str(TESTS_DIR / "cli_driver.py"), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=TESTS_DIR, check=False)


def test_a_detached_strict_run_exits_1_on_a_warn(tmp_path: Path) -> None:
    """Seen failing on the old code: the request had no `strict`, so the detached engine stored 0 and `follow`
    returned it."""
    path = tmp_path / "s.db"
    started = cli(path, "run", "warns", "--detach", "--strict", "--no-telemetry")
    assert started.returncode == 0, started.stderr
    store = Store(path)
    deadline = time.monotonic() + 60
    while (store.run(1) or {}).get("status") in (None, "running"):
        assert time.monotonic() < deadline, "the detached run never ended"
        time.sleep(0.1)
    run = store.run(1)
    assert run is not None and (run["strict"], run["exit_code"]) == (1, EXIT_FAIL)
    followed = cli(path, "follow", "1")
    assert followed.returncode == EXIT_FAIL, followed.stderr
    assert "--strict: 1 WARN verdict(s) fail the run" in followed.stderr


class NoRankZero:
    """A fleet channel whose rank 0 never hands out the nonce: the agent's run goes on alone."""

    broken: str | None = None

    def publish(self, event: object) -> None:
        pass


def test_a_fleet_agent_with_strict_exits_1_on_a_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen failing on the old code: the agent applied --strict to its JUnit file only, and exited 0."""
    monkeypatch.setitem(STAGES, "warns", fake("warns"))
    monkeypatch.setattr(agent_module, "connect", lambda env, timeout: None)
    monkeypatch.setattr(agent_module, "FleetChannel", lambda *args: NoRankZero())

    def no_nonce(channel: object, timeout: float) -> None:
        raise NoNonce("rank 0 never answered")

    monkeypatch.setattr(agent_module, "take_nonce", no_nonce)
    codes = {}
    for strict in (False, True):
        argv = ["warns", "--no-telemetry", "--store", str(tmp_path / f"{strict}.db")] + (["--strict"] if strict else [])
        request, store = request_from_args(agent_parser().parse_args(argv))
        env = FleetEnv(0, 1, "127.0.0.1", 1, "r", "host-a", False, "torchrun")
        options = SimpleNamespace(join_timeout=1.0)
        agent = agent_module.Agent(env, store, request, options, b"k")  # type: ignore[arg-type]
        agent.say = lambda text: None
        codes[strict] = agent.run()
    assert codes == {False: EXIT_OK, True: EXIT_FAIL}
