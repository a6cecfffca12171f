"""The passive health gate: may this node take work? Read from the driver, NVML, sysfs and the kernel log only.

It imports the standard library, engine.events, engine.exits, engine.facts, engine.hw and engine.store;
never torch (a scheduler runs it every few minutes on every node), never textual or rich.
"""
