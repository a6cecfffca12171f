"""The links stage: topology, peer-to-peer copies and collectives between GPUs."""
