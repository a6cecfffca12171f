"""The node-problem-detector custom plugin shipped in examples/: its config holds together (rigcheck's own
timeout inside the rule's, inside the plugin's), and the command it runs keeps the plugin contract: exit 0 OK,
1 a problem, 2 unknown, and one line of at most 80 characters on stdout, even when the driver hangs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gate_fakes import gate_env, gate_library_fixture, write_state  # noqa: F401 - a fixture

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "node-problem-detector" / "rigcheck-gpu.json"
RIGCHECK = Path(sys.executable).with_name("rigcheck")


def seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+)s", text)
    assert match, f"a duration NPD reads: {text!r}"
    return float(match.group(1))


@pytest.fixture(scope="module")
def config() -> dict:
    return json.loads(CONFIG.read_text())


def test_the_config_nests_its_timeouts_and_cuts_at_80(config: dict) -> None:
    plugin = config["pluginConfig"]
    assert config["plugin"] == "custom" and plugin["max_output_length"] <= 80
    (rule,) = config["rules"]
    assert rule["type"] == "permanent" and rule["condition"] == config["conditions"][0]["type"]
    assert rule["args"][:3] == ["check", "--exit-style", "npd"]
    own = float(rule["args"][rule["args"].index("--timeout") + 1])
    assert own < seconds(rule["timeout"]) <= seconds(plugin["timeout"]) < seconds(plugin["invoke_interval"])


def run_rule(config: dict, library: Path, state: Path, folder: Path) -> tuple[int, str, float]:
    (rule,) = config["rules"]
    args = [str(RIGCHECK), *rule["args"], "--store", str(folder / "store.db"), "--kernel-log", str(folder / "kmsg")]
    start = time.monotonic()
    done = subprocess.run(
        args, env=gate_env(library, state), capture_output=True, text=True, timeout=seconds(rule["timeout"]) * 4
    )
    return done.returncode, done.stdout, time.monotonic() - start


@pytest.mark.parametrize(
    ("faults", "code", "first"),
    [
        ({"gpus": 2}, 0, "OK: 2 GPU(s) healthy"),
        ({"persistence1": 0}, 0, "WARN: nvml:1 persistence off"),
        (
            {"remap_failure1": 1, "ecc_uncorrected0": 4},
            1,
            "CRITICAL: nvml:0 uncorrectable ECC; nvml:1 row remap failed",
        ),
        ({"init_fail": 1}, 2, "UNKNOWN: NVML fails to start"),
    ],
)
def test_each_state_keeps_the_plugin_contract(
    config: dict,
    gate_library: Path,
    tmp_path: Path,
    faults: dict,
    code: int,
    first: str,
) -> None:
    state = tmp_path / "state"
    write_state(state, **faults)
    (tmp_path / "kmsg").write_text("")
    returned, out, _ = run_rule(config, gate_library, state, tmp_path)
    assert returned == code, out
    assert out.count("\n") == 1 and len(out.rstrip("\n")) <= 80
    assert out.startswith(first)


def test_a_hung_driver_answers_unknown_inside_the_rules_timeout(
    config: dict,
    gate_library: Path,
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    write_state(state, init_sleep=120)
    (tmp_path / "kmsg").write_text("")
    returned, out, took = run_rule(config, gate_library, state, tmp_path)
    assert returned == 2 and out.startswith("UNKNOWN: the check did not finish in 15 s")
    assert out.count("\n") == 1 and len(out.rstrip("\n")) <= 80
    assert took < seconds(config["rules"][0]["timeout"])
