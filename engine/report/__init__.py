"""The row model and every export of a stored run (JSON, CSV, Markdown, JUnit, Prometheus, fleet grid, compare)."""
