"""Where this agent stands in the fleet: its rank, the world, the store to reach, and the host name it reports.

Read from torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID), or
from Slurm's when started by `srun` alone (SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_NODELIST, SLURM_JOB_ID).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

NODE_NAME_ENV = "RIGCHECK_NODE_NAME"
DEFAULT_SLURM_PORT = 29517


class FleetEnvError(Exception):
    """This process was not started as a fleet agent; the message says what is missing and how to start one."""


@dataclass(frozen=True)
class FleetEnv:
    rank: int
    world: int
    store_host: str
    store_port: int
    run_id: str  # the rendezvous id: every agent of one fleet run shares it
    node: str  # the host name this agent reports
    hosts_store: bool  # this agent serves the store itself (srun without torchrun: rank 0 does)
    launcher: str  # torchrun | slurm


def node_name(env: Mapping[str, str]) -> str:
    return env.get(NODE_NAME_ENV) or socket.gethostname()


def first_slurm_host(nodelist: str) -> str:
    """The first host of a Slurm node list: 'gpu[03-05,09],cpu1' gives 'gpu03'."""
    first = re.match(r"([^,\[]+)(?:\[([^\]]+)\]([^,]*))?", nodelist.strip())
    if not first or not first.group(1):
        raise FleetEnvError(f"cannot read the first host of SLURM_JOB_NODELIST {nodelist!r}")
    prefix, ranges, suffix = first.group(1), first.group(2), first.group(3) or ""
    if not ranges:
        return prefix
    start = ranges.split(",")[0].split("-")[0]
    return prefix + start + suffix


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise FleetEnvError(f"{name}={env[name]!r} is not a whole number") from None


def read_env(env: Mapping[str, str] | None = None) -> FleetEnv:
    env = os.environ if env is None else env
    if "RANK" in env and "WORLD_SIZE" in env and "MASTER_ADDR" in env and "MASTER_PORT" in env:
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
        # torchrun's agent serves the store (TORCHELASTIC_USE_AGENT_STORE); a plain launcher leaves it to rank 0
        agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
        run_id = env.get("TORCHELASTIC_RUN_ID") or env.get("SLURM_JOB_ID") or "fleet"
        launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"
        hosts_store = rank == 0 and not agent_store
        if "LOCAL_WORLD_SIZE" in env and _int(env, "LOCAL_WORLD_SIZE") != 1:
            raise FleetEnvError(
                f"{env['LOCAL_WORLD_SIZE']} agents on this host: start one per host (--nproc-per-node=1); "
                "each agent runs every GPU of its host"
            )
        store_host, store_port = env["MASTER_ADDR"], _int(env, "MASTER_PORT")
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS")
        run_id, launcher, hosts_store = env.get("SLURM_JOB_ID", "fleet"), "slurm", rank == 0
        store_host = env.get("MASTER_ADDR") or first_slurm_host(
            env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", "")
        )
        store_port = _int(env, "MASTER_PORT") if "MASTER_PORT" in env else DEFAULT_SLURM_PORT
    else:
        raise FleetEnvError(
            "not started as a fleet agent: run it under torchrun (torchrun --nnodes=N --nproc-per-node=1 "
            "--rdzv-backend=c10d --rdzv-endpoint=HOST:PORT --rdzv-id=ID -m rigcheck.fleet) or srun "
            "(one task per node)"
        )
    if not 0 <= rank < world:
        raise FleetEnvError(f"rank {rank} is outside a world of {world}")
    return FleetEnv(rank, world, store_host, store_port, run_id, node_name(env), hosts_store, launcher)
