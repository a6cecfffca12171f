"""The stages a run is made of; each module's `run(context)` yields events inside a stage child."""
