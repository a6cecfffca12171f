"""The one door to hardware: NVML, PCI addresses, amdgpu's sysfs and the device-index rules live here.

Everything here imports only the standard library (and nothing above it in rigcheck), so stage
children under any `--python` interpreter can use it; telemetry/, facts/ and stages/ reach the
hardware only through these modules.
"""
