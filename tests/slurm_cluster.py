"""A real one-node Slurm cluster (munged, slurmctld, slurmd) in a private folder, for the gate's drain tests.

Everything lives under the test's folder: its own munge key and socket, ports picked free, a state folder
started clean (-c). Daemons run in the foreground as children of the test and are stopped by it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ci_tools import need, skip_or_fail

MUNGED, SLURMCTLD, SLURMD = "/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd"
START_S = 120.0  # a busy 2-core machine can take a while to start three daemons


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, ready: Callable[[], bool], timeout: float = START_S) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")


class Cluster:
    def __init__(self, folder: Path, health_program: Path, interval_s: int, others: tuple[str, ...] = ()) -> None:
        self.folder = folder
        self.node = socket.gethostname().split(".")[0]
        self.conf = folder / "slurm.conf"
        self.munge_socket = folder / "munge.sock"
        self.env = os.environ | {"SLURM_CONF": str(self.conf)}
        lines = {
            "ClusterName": "rigtest",
            "SlurmctldHost": f"{self.node}(127.0.0.1)",
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "SlurmctldPort": free_port(),
            "SlurmdPort": free_port(),
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.munge_socket}",
            "StateSaveLocation": folder / "state",
            "SlurmdSpoolDir": folder / "spool",
            "SlurmctldPidFile": folder / "slurmctld.pid",
            "SlurmdPidFile": folder / "slurmd.pid",
            "SlurmctldLogFile": folder / "slurmctld.log",
            "SlurmdLogFile": folder / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "SwitchType": "switch/none",
            "MpiDefault": "none",
            "ReturnToService": 2,
            "SchedulerType": "sched/builtin",
            "SelectType": "select/linear",
            "HealthCheckProgram": health_program,
            "HealthCheckInterval": interval_s,
        }
        text = "".join(f"{key}={value}\n" for key, value in lines.items())
        text += f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n"
        for number, other in enumerate(others, start=2):  # nodes no slurmd answers for: another admin's to drain
            text += f"NodeName={other} NodeAddr=127.0.0.{number} CPUs=1 State=UNKNOWN\n"
        text += f"PartitionName=debug Nodes={','.join((self.node, *others))} Default=YES State=UP\n"
        (folder / "state").mkdir()
        (folder / "spool").mkdir()
        self.conf.write_text(text)
        self.daemons: list[subprocess.Popen[bytes]] = []

    def scontrol(self, *args: str) -> str:
        done = subprocess.run(
            ["scontrol", *args], env=self.env, capture_output=True, text=True, timeout=30, check=False
        )
        return done.stdout + done.stderr

    def node_line(self, node: str | None = None) -> str:
        return self.scontrol("show", "node", node or self.node, "--oneliner")

    def _start(self, *command: str) -> None:
        log = (self.folder / f"{Path(command[0]).name}.out").open("wb")
        self.daemons.append(
            subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )

    def start(self) -> None:
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self._start(
            MUNGED, "-F", "-f", f"--socket={self.munge_socket}", f"--key-file={key}",
            f"--pid-file={self.folder / 'munged.pid'}", f"--log-file={self.folder / 'munged.log'}",
            f"--seed-file={self.folder / 'munged.seed'}",
        )  # fmt: skip
        wait_for("munged's socket", self.munge_socket.exists)
        self._start(SLURMCTLD, "-D", "-c", "-i", "-f", str(self.conf))
        wait_for("slurmctld to answer", lambda: "UP" in self.scontrol("ping"))
        self._start(SLURMD, "-D", "-f", str(self.conf), "-N", self.node)
        wait_for("the node to register", lambda: "State=IDLE" in self.node_line())

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            if daemon.poll() is None:
                daemon.terminate()
        for daemon in reversed(self.daemons):
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait(timeout=30)


@contextmanager
def slurm_cluster(
    folder: Path, health_program: Path, interval_s: int = 3, others: tuple[str, ...] = ()
) -> Iterator[Cluster]:
    need(MUNGED, SLURMCTLD, SLURMD, "scontrol")
    if os.geteuid() != 0:
        skip_or_fail("a private slurmd runs as root (SlurmdUser=root) and this test is not root")
    cluster = Cluster(folder, health_program, interval_s, others)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
