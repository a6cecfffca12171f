#!/bin/sh
# rigcheck's passive health check for Slurm: as HealthCheckProgram (slurm.conf) or called from a job Prolog.
# It drains this node with Reason="rigcheck: <cause>" (the cause first: `sinfo -R` shows 20 characters) when
# the check fails, cannot run or does not finish in RIGCHECK_TIMEOUT seconds (CRITICAL or UNKNOWN: Slurm
# ignores this program's exit code, so rigcheck's own scontrol drains), and resumes it once the check passes
# again, but only if the drain reason is rigcheck's own. It acts for this one node only (SLURMD_NODENAME).
# Extra arguments go to `rigcheck slurm-health` (e.g. --expect-gpus 8; --expect-idle in a prolog).
# slurmd runs health checks with an almost empty environment: set RIGCHECK (the rigcheck to run) and
# SLURM_CONF here or in the environment of a wrapper if they are not the defaults.
PATH="${PATH:-/usr/bin:/bin}:/usr/local/bin:/usr/bin:/bin:/usr/sbin"
export PATH
exec "${RIGCHECK:-rigcheck}" slurm-health --exit-style nagios --timeout "${RIGCHECK_TIMEOUT:-20}" "$@"
