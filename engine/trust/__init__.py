"""Whether a figure can be trusted: the conditions it was measured under, contention, a quiet host, peers."""
