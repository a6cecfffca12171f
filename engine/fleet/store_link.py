"""The fleet's store as an agent reaches it: torchrun's c10d store (or, under srun alone, one rank 0 serves),
namespaced for this fleet run, with a bound on every call so that a hung rank 0 never holds an agent long."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rigcheck.engine.fleet.env import FleetEnv

STORE_OP_TIMEOUT_S = 30.0


class FleetStoreError(Exception):
    """The fleet's store (torchrun's, or rank 0's under srun) could not be reached; the message says where."""


def connect(env: FleetEnv, timeout: float) -> Any:
    """torchrun's store (or, under srun alone, one rank 0 serves), namespaced for this fleet run."""
    from torch.distributed import PrefixStore, TCPStore

    try:
        store = TCPStore(
            env.store_host,
            env.store_port,
            is_master=env.hosts_store,
            timeout=timedelta(seconds=timeout),
            wait_for_workers=False,
        )
    except (RuntimeError, OSError) as error:  # torch.distributed's DistError is a RuntimeError
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FleetStoreError(f"the fleet store at {env.store_host}:{env.store_port} failed: {first}") from None
    store.set_timeout(timedelta(seconds=STORE_OP_TIMEOUT_S))  # a hung rank 0 must not hold a stage's events long
    return PrefixStore(f"rigcheck/{env.run_id}/", store)
