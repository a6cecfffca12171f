"""The health stage: what the GPU driver already knows about each card."""
