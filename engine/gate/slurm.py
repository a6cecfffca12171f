"""Slurm: drain this node with rigcheck's reason when the gate fails, and resume it when the gate passes again,
but only a drain whose reason is rigcheck's own (LBNL NHC's convention: a tool clears only what it set).

One node only, named plainly (no list, no hostlist range): the gate judges the GPUs it runs beside and never
acts for another node. The reason puts the cause right after the tag, since `sinfo -R` shows 20 characters:
`rigcheck: row remap failed gpu1`; it holds only plain characters, whatever text the check read.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from rigcheck.engine.gate.outcome import CRITICAL, UNKNOWN, fit

PREFIX = "rigcheck:"
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")  # one Slurm node: no comma list, no [1-4] range
_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;_+%()/-]")  # what a drain reason may hold: no quotes, brackets, escapes
_STATE_HEAD = re.compile(r"^(?:CRITICAL|UNKNOWN|WARN|OK): ")
_DEVICE_FIRST = re.compile(r"^(nvml|amdgpu):(\d+) (.+)$")
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


class BadNode(ValueError):
    """A node name that is not one plain Slurm node name (bad input: the gate acts for its own node only)."""


def node_name(explicit: str | None = None) -> str:
    """The node's Slurm name: --node, else SLURMD_NODENAME (set in prologs and health checks), else the host.
    A list or a range ("vm,ghost", "gpu[1-4]") or an empty name is refused: one node, this one."""
    if explicit is not None:
        name, source = explicit, "--node"
    elif "SLURMD_NODENAME" in os.environ:
        name, source = os.environ["SLURMD_NODENAME"], "SLURMD_NODENAME"
    else:
        name, source = socket.gethostname().split(".")[0], "the host name"
    if not NODE_NAME.match(name):
        raise BadNode(f"{source} {name!r} is not one Slurm node name: the gate acts for its own node only")
    return name


def plain_text(text: str) -> str:
    """Text safe for a drain reason or a one-line message: plain characters only (each other one becomes '?')."""
    return " ".join(_UNSAFE.sub("?", text).split())


def drain_reason(line: str) -> str:
    """The drain reason for a failing check's summary: the tag, then the cause at once (`sinfo -R` shows 20
    characters), each GPU named after its cause: "rigcheck: row remap failed gpu1; XID 79 gpu0"."""
    body = _STATE_HEAD.sub("", line)
    causes = []
    for cause in body.split("; "):
        moved = _DEVICE_FIRST.match(cause)
        if moved:
            kind, index, what = moved.groups()
            cause = f"{what} {'gpu' if kind == 'nvml' else 'amdgpu'}{index}"
        causes.append(cause)
    return fit(f"{PREFIX} {plain_text('; '.join(causes))}", REASON_MAX)


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
    if len(re.findall(r"\bNodeName=", text)) != 1 or f"NodeName={node} " not in f"{text} ":
        return f"scontrol show node {node}: the answer is not this one node's"
    found = parse_node(text)
    return found or f"scontrol show node {node}: no State= in its answer"


def act(node: str, state: str, line: str, run: Run | None = None, dry_run: bool = False) -> tuple[str, bool]:
    """Drain, resume or leave the node for the gate's `state`; (what was done in words, whether it went well)."""
    run = run or run_scontrol
    current = read_node(node, run)
    if isinstance(current, str):
        return current, False
    reason = drain_reason(line)
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
