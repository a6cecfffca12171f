"""rigcheck's headless engine: stages, the runner that isolates them, telemetry and the store (no UI)."""
