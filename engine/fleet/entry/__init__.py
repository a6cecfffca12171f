"""`python -m rigcheck.fleet`: the agent torchrun (or srun) starts on every host of a fleet run.

The wheel maps this folder, and only it, to `rigcheck.fleet`; the agent itself is engine/fleet/main.py.
"""
