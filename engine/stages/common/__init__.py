"""What several stages share inside a stage child: devices, timing, figures' checks, peaks, numerics."""
