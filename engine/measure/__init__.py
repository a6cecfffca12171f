"""Arithmetic of figures shared by stage children and the parent: statistics, physical limits, collective bandwidth."""
