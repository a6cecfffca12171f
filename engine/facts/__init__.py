"""Readers of what is installed and visible, used by Probe and the fingerprint inside stage children."""
