"""A fleet run: many hosts under torchrun, one agent each, every host's results in rank 0's store."""
