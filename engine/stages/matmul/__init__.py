"""The matmul stage: the size x dtype sweep and the max-find shape search."""
