"""`python -m rigcheck.fleet`: the agent torchrun (or srun) starts on every host of a fleet run."""
