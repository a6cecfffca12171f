"""The hostbugs stage: the host's own silent numerical defects (sgemm races, convolutions that do not repeat)."""
