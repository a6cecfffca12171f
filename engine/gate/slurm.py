"""Slurm: drain this node with rigcheck's reason when the gate fails, and resume it when the gate passes again,
but only a drain whose reason is rigcheck's own (LBNL NHC's convention: a tool clears only what it set)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from rigcheck.engine.gate.outcome import CRITICAL, UNKNOWN, fit

PREFIX = "rigcheck:"
REASON_MAX = 100  # the summary (80) and the prefix; scontrol takes longer, `sinfo -R` shows about this much
SCONTROL_TIMEOUT_S = 15.0  # below Slurm's 60 s HealthCheckProgram limit and NHC's 30 s watchdog
_STATE = re.compile(r"\bState=(\S+)")
_REASON = re.compile(r"\bReason=(.*?) \[[^\]\s]*@[^\]\s]*\]")  # "Reason=why [user@time]"
_BARE_REASON = re.compile(r"\bReason=(.*?)(?= \w+=|$)")

Run = Callable[[list[str]], tuple[int, str]]


@dataclass(frozen=True)
class NodeState:
    state: str  # "IDLE", "IDLE+DRAIN", "MIXED+DRAIN", "DRAINED", ...
    reason: str  # "" where none

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state.upper()

    @property
    def ours(self) -> bool:
        return self.reason.startswith(PREFIX)


def run_scontrol(args: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, timeout=SCONTROL_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        return 127, "scontrol not found: is this a Slurm node?"
    except subprocess.TimeoutExpired:
        return 124, f"scontrol did not answer in {SCONTROL_TIMEOUT_S:.0f} s"
    return done.returncode, (done.stdout + done.stderr).strip()


def node_name(explicit: str | None = None) -> str:
    """The node's Slurm name: --node, else SLURMD_NODENAME (set in prologs and health checks), else the host."""
    return explicit or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def parse_node(text: str) -> NodeState | None:
    state = _STATE.search(text)
    if state is None:
        return None
    reason = _REASON.search(text) or _BARE_REASON.search(text)
    value = reason.group(1).strip() if reason else ""
    return NodeState(state.group(1), "" if value in ("(null)", "none", "None") else value)


def read_node(node: str, run: Run | None = None) -> NodeState | str:
    """The node's state and drain reason, or why they could not be read."""
    code, text = (run or run_scontrol)(["show", "node", node, "--oneliner"])
    if code != 0:
        return f"scontrol show node {node} failed ({code}): {fit(text, 120)}"
    found = parse_node(text)
    return found or f"scontrol show node {node}: no State= in its answer"


def act(node: str, state: str, line: str, run: Run | None = None, dry_run: bool = False) -> tuple[str, bool]:
    """Drain, resume or leave the node for the gate's `state`; (what was done in words, whether it went well)."""
    run = run or run_scontrol
    current = read_node(node, run)
    if isinstance(current, str):
        return current, False
    reason = fit(f"{PREFIX} {line}", REASON_MAX)
    failing = state in (CRITICAL, UNKNOWN)
    if failing and current.drained and not current.ours:
        return f"node {node} already drained by someone else ({current.reason or 'no reason'}): left as it is", True
    if failing and current.drained and current.reason == reason:
        return f"node {node} stays drained: {reason}", True
    if failing:
        command = ["update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]
        done = "drained"
    elif current.drained and current.ours:
        command = ["update", f"NodeName={node}", "State=RESUME"]
        done = f"resumed (its drain was rigcheck's: {current.reason})"
    elif current.drained:
        return f"node {node} drained by someone else ({current.reason or 'no reason'}): left as it is", True
    else:
        return f"node {node} healthy and in service ({current.state})", True
    if dry_run:
        return f"would run: scontrol {' '.join(command)}", True
    code, text = run(command)
    if code != 0:
        return f"scontrol {' '.join(command[:3])} failed ({code}): {fit(text, 120)}", False
    return f"node {node} {done}", True
