"""Live telemetry: one reader per vendor behind one interface, a sampler thread, and conditions."""
