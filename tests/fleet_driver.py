"""Starts a real fleet on this machine for tests: torchrun per "host", a c10d rendezvous on 127.0.0.1, gloo."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rigcheck.engine.store import Store


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


FLEET_KEY = "test-fleet-key-" + "0123456789abcdef" * 3  # every agent of a test fleet shares it


@dataclass
class Fleet:
    port: int = 0  # the rendezvous endpoint's, where torchrun's store listens
    agents: list[Agent] = field(default_factory=list)
    burners: list[subprocess.Popen[bytes]] = field(default_factory=list)

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
        """Every agent's whole session (torchrun and its agent; the stage children die with their parent) and the
        burners."""
        for burner in self.burners:
            burner.kill()
            burner.wait(10)
        for agent in self.agents:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(agent.proc.pid, signal.SIGKILL)
            agent.proc.wait(10)


def start_fleet(
    tmp_path: Path,
    names: list[str],
    agent_args: list[str],
    env_for: dict[str, dict[str, str]] | None = None,
    cpus_for: dict[str, str] | None = None,
    burners_for: dict[str, int] | None = None,
    rdzv_id: str = "",
) -> Fleet:
    """One torchrun per name, each in a session of its own; the first serves the rendezvous, the others only join
    it. `cpus_for` pins a host's agent to CPUs; `burners_for` starts busy loops pinned beside it, each in a session
    of its own (with autogroup scheduling the kernel shares a CPU between sessions, and every stage child has one)."""
    port = free_port()
    fleet = Fleet(port)
    for index, name in enumerate(names):
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nnodes={len(names)}",
            "--nproc-per-node=1",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}",
            f"--rdzv-id={rdzv_id or f'test-{port}'}",
        ]
        if index:
            argv.append("--rdzv-conf=is_host=0")
        argv += ["-m", "rigcheck.fleet", *agent_args]
        pin = ["taskset", "-c", cpus_for[name]] if cpus_for and name in cpus_for and shutil.which("taskset") else []
        argv = [*pin, *argv]
        for _ in range((burners_for or {}).get(name, 0)):
            burner = [*pin, sys.executable, "-c", "while True: pass"]
            fleet.burners.append(subprocess.Popen(burner, start_new_session=True))
        scratch = tmp_path / f"{name}.tmp"  # a killed agent leaves its folder here (the next start sweeps such)
        scratch.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "RIGCHECK_NODE_NAME": name,
            "RIGCHECK_STORE": str(tmp_path / f"{name}.db"),
            "TMPDIR": str(scratch),
            "RIGCHECK_FLEET_KEY": FLEET_KEY,
        }
        env |= (env_for or {}).get(name, {})
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        proc = subprocess.Popen(argv, stdout=out.open("wb"), stderr=err.open("wb"), env=env, start_new_session=True)
        fleet.agents.append(Agent(name, tmp_path / f"{name}.db", proc, out, err))
        if index == 0:
            time.sleep(1.5)  # the first one serves the rendezvous: let it bind before the others look for it
    return fleet


def fleet_report(timeout: float, fleet: Fleet) -> dict:
    """Rank 0's fleet run once it has ended, from whichever agent's store holds it (torchrun picks rank 0,
    not always the host that serves the rendezvous; torchrun itself may still wait at its exit barrier)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for agent in fleet.agents:
            row = None
            if agent.store.exists():
                with contextlib.suppress(sqlite3.OperationalError), sqlite3.connect(agent.store) as db:
                    query = "SELECT id FROM runs WHERE device = 'fleet' AND status != 'running'"
                    row = db.execute(query).fetchone()  # (no such table while the store is being made)
            if row:
                report = Store(agent.store).report(row[0])
                assert report is not None
                return report
        time.sleep(0.5)
    fleet.stop()
    logs = "\n".join(f"--- {a.name}\n{a.text()[-4000:]}" for a in fleet.agents)
    raise AssertionError(f"no fleet run ended within {timeout:.0f} s:\n{logs}")
