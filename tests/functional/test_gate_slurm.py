"""`rigcheck slurm-health` as slurmd's HealthCheckProgram on a real one-node cluster: a failing check drains the
node with rigcheck's reason, a clean one resumes it, and a drain someone else set is left alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gate_fakes import gate_env, gate_library_fixture, write_state  # noqa: F401 - a fixture
from slurm_cluster import Cluster, slurm_cluster, wait_for

SHIPPED = Path(__file__).resolve().parents[2] / "examples" / "slurm" / "rigcheck-health.sh"
RIGCHECK = Path(sys.executable).with_name("rigcheck")
CHECK_S = 180.0  # several health-check rounds on a busy machine


def health_program(folder: Path, library: Path, state: Path, cluster_conf: Path) -> Path:
    """What a site puts in slurm.conf: a wrapper that sets what slurmd's bare environment lacks, then the shipped
    script. It counts its runs, so the test can wait for checks rather than sleep, and marks each one in flight
    (slurmd may start one while another still runs: a hung check lasts longer than the interval)."""
    script = folder / "health.sh"
    (folder / "inflight").mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f"echo > {folder / 'inflight'}/$$\n"
        f"export FAKE_NVML_STATE={state} LD_LIBRARY_PATH={library.parent} SLURM_CONF={cluster_conf}\n"
        f"export RIGCHECK={RIGCHECK} TMPDIR={folder}\n"
        f"RIGCHECK_TIMEOUT=$(cat {folder / 'timeout'} 2>/dev/null || echo 20); export RIGCHECK_TIMEOUT\n"
        f"{SHIPPED} --store {folder / 'store.db'} --kernel-log {folder / 'kmsg'} --expect-gpus 2 "
        f">> {folder / 'health.out'} 2>&1\n"
        f"echo $? >> {folder / 'runs'}\n"
        f"rm -f {folder / 'inflight'}/$$\n"
    )
    script.chmod(0o755)
    return script


def runs(folder: Path) -> int:
    path = folder / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def reason_and_state(cluster: Cluster, node: str | None = None) -> tuple[str, str]:
    line = cluster.node_line(node)
    state = line.split("State=", 1)[1].split()[0]
    reason = line.split("Reason=", 1)[1].rsplit(" [", 1)[0] if "Reason=" in line else ""
    return state, reason


def in_flight(folder: Path) -> set[str]:
    """The health checks running now: each one's marker, while its process lives."""
    return {path.name for path in (folder / "inflight").iterdir() if Path(f"/proc/{path.name}").exists()}


def wait_settled(folder: Path) -> None:
    """Wait until every check that began before now has ended: one begun under the old faults may still act on
    the node after a newer one has (a hung check drained the node again after a clean one had resumed it)."""
    begun = in_flight(folder)
    wait_for("the checks begun before the change to end", lambda: not begun & in_flight(folder), CHECK_S)


def wait_runs(folder: Path, more: int) -> None:
    target = runs(folder) + more
    wait_for(f"{more} more health check(s)", lambda: runs(folder) >= target, CHECK_S)


@pytest.mark.timeout(900)
def test_slurm_drains_on_failure_resumes_after_and_leaves_others_drains(gate_library: Path, tmp_path: Path) -> None:
    state = tmp_path / "nvml-state"
    write_state(state)
    (tmp_path / "kmsg").write_text("")
    conf = tmp_path / "slurm.conf"
    program = health_program(tmp_path, gate_library, state, conf)
    with slurm_cluster(tmp_path, program) as cluster:
        assert cluster.conf == conf
        wait_runs(tmp_path, 1)
        assert "DRAIN" not in reason_and_state(cluster)[0]

        write_state(state, remap_failure1=1)
        wait_settled(tmp_path)
        wait_for("rigcheck's drain", lambda: "DRAIN" in reason_and_state(cluster)[0], CHECK_S)
        node_state, reason = reason_and_state(cluster)
        assert reason == "rigcheck: row remap failed gpu1", (tmp_path / "health.out").read_text()
        assert "row remap" in reason[:20]  # `sinfo -R` shows 20 characters of it by default

        write_state(state)
        wait_settled(tmp_path)
        wait_for("the resume", lambda: "DRAIN" not in reason_and_state(cluster)[0], CHECK_S)

        cluster.scontrol("update", f"NodeName={cluster.node}", "State=DRAIN", "Reason=maintenance: new PSU")
        write_state(state, remap_failure1=1)
        wait_runs(tmp_path, 2)
        assert reason_and_state(cluster)[1] == "maintenance: new PSU"
        write_state(state)
        wait_runs(tmp_path, 2)
        node_state, reason = reason_and_state(cluster)
        assert "DRAIN" in node_state and reason == "maintenance: new PSU"
        assert "drained by someone else" in (tmp_path / "health.out").read_text()


def rigcheck_slurm(
    cluster: Cluster, library: Path, state: Path, folder: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RIGCHECK), "slurm-health", "--no-store", "--kernel-log", str(folder / "kmsg"), *args],
        env=gate_env(library, state) | {"SLURM_CONF": str(cluster.conf)} | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.timeout(900)
def test_a_hung_driver_drains_the_node_and_another_nodes_drain_is_never_touched(
    gate_library: Path, tmp_path: Path
) -> None:
    """Slurm ignores a health program's exit code: only its scontrol drains. Before, the watchdog left at once and
    the node took jobs with a wedged driver; and `--node vm,ghost` resumed ghost, which an admin had drained."""
    state = tmp_path / "nvml-state"
    write_state(state)
    (tmp_path / "kmsg").write_text("")
    program = health_program(tmp_path, gate_library, state, tmp_path / "slurm.conf")
    with slurm_cluster(tmp_path, program, others=("ghost",)) as cluster:
        wait_runs(tmp_path, 1)
        assert "DRAIN" not in reason_and_state(cluster)[0]

        (tmp_path / "timeout").write_text("3\n")  # short only while the driver hangs: a busy host is never "hung"
        write_state(state, init_sleep=600)
        wait_settled(tmp_path)
        wait_for("the hung driver's drain", lambda: "DRAIN" in reason_and_state(cluster)[0], CHECK_S)
        assert reason_and_state(cluster)[1] == "rigcheck: hung driver? no answer in 3 s"
        (tmp_path / "timeout").unlink()
        write_state(state)
        wait_settled(tmp_path)
        wait_for("the resume", lambda: "DRAIN" not in reason_and_state(cluster)[0], CHECK_S)

        admin = "PSU swap, do not resume"
        cluster.scontrol("update", "NodeName=ghost", "State=DRAIN", f"Reason={admin}")
        assert reason_and_state(cluster, "ghost")[1] == admin
        for args, env in (
            (["--node", f"{cluster.node},ghost"], {}),
            ([], {"SLURMD_NODENAME": f"{cluster.node},ghost"}),
        ):
            done = rigcheck_slurm(cluster, gate_library, state, tmp_path, *args, **env)
            assert done.returncode == 2 and "not one Slurm node name" in done.stderr, done.stderr
        done = rigcheck_slurm(cluster, gate_library, state, tmp_path, "--node", cluster.node)
        assert done.returncode == 0 and "healthy and in service" in done.stderr, done.stderr
        ghost_state, ghost_reason = reason_and_state(cluster, "ghost")
        assert "DRAIN" in ghost_state and ghost_reason == admin
