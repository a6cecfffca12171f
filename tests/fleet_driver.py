"""Starts a real fleet on this machine for tests: torchrun per "host", a c10d rendezvous on 127.0.0.1, gloo."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Agent:
    name: str
    store: Path
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def text(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")


@dataclass
class Fleet:
    agents: list[Agent] = field(default_factory=list)

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for agent in self.agents:
            try:
                agent.proc.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stop()
                logs = "\n".join(f"--- {a.name}\n{a.text()[-3000:]}" for a in self.agents)
                raise AssertionError(f"the fleet did not end within {timeout:.0f} s:\n{logs}") from None

    def stop(self) -> None:
        for agent in self.agents:
            if agent.proc.poll() is None:
                agent.proc.kill()
                agent.proc.wait(10)


def start_fleet(
    tmp_path: Path,
    names: list[str],
    agent_args: list[str],
    env_for: dict[str, dict[str, str]] | None = None,
    cpus_for: dict[str, str] | None = None,
) -> Fleet:
    """One torchrun per name; the first serves the rendezvous, the others only join it."""
    port, fleet = free_port(), Fleet()
    for index, name in enumerate(names):
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nnodes={len(names)}",
            "--nproc-per-node=1",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            f"--rdzv-id=test-{port}",
        ]
        if index:
            argv.append("--rdzv-conf=is_host=0")
        argv += ["-m", "rigcheck.fleet", *agent_args]
        if cpus_for and name in cpus_for and shutil.which("taskset"):
            argv = ["taskset", "-c", cpus_for[name], *argv]
        env = {**os.environ, "RIGCHECK_NODE_NAME": name, "RIGCHECK_STORE": str(tmp_path / f"{name}.db")}
        env |= (env_for or {}).get(name, {})
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        proc = subprocess.Popen(argv, stdout=out.open("wb"), stderr=err.open("wb"), env=env, start_new_session=True)
        fleet.agents.append(Agent(name, tmp_path / f"{name}.db", proc, out, err))
        if index == 0:
            time.sleep(1.5)  # the first one serves the rendezvous: let it bind before the others look for it
    return fleet
