"""An agent that will not run (bad input, a busy store, a device another run holds) tells rank 0 why, so that rank
0 quotes it rather than wait for a host that never comes; a rank 0 that refuses tells the agents waiting for the
run's nonce, each in answer to its own challenge (handshake.py), so that a refusal recorded in another run never
counts here."""

from __future__ import annotations

from contextlib import suppress

from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.env import FleetEnv
from rigcheck.engine.fleet.handshake import refuse_asks, take_nonce
from rigcheck.engine.fleet.store_link import connect

__all__ = ["refuse_asks", "refuse_early", "refuse_on"]


def refuse_on(channel: FleetChannel | None, why: str, name: str) -> None:
    """Write a refusal where rank 0 reads it, if the store can be reached; a refusal never waits long on it."""
    if channel is None:
        return
    with suppress(Exception):
        channel.refuse(why, name)


def refuse_early(env: FleetEnv, key: bytes, why: str, timeout: float = 20.0) -> None:
    """An agent that refused before it joined (bad input, a busy store) still tells rank 0 why. Under srun
    alone rank 0 serves the store itself, so a refusing rank 0 has no one to tell."""
    if env.hosts_store:
        return
    with suppress(Exception):
        channel = FleetChannel(connect(env, timeout), env.rank, env.world, key, env.run_id)
        take_nonce(channel, timeout)  # rank 0 makes the run's nonce; another agent asks for it
        refuse_on(channel, why, env.node)
        if env.rank == 0:  # the agents waiting for the nonce take the refusal only in answer to their own ask
            refuse_asks(channel, why, timeout)
