#!/usr/bin/env bash
# Where a run's time goes (issue 42): the default and the quick profile, RUNS times each (3), wall clock from
# the command to its exit, then bench/profile_times.py's table: per stage and per check, start-up and end, the
# host CPU's share (rigcheck's own CPU-seconds from the run's telemetry), medians, SUSPECT and WARN counts.
#
#   bash bench/profile_times.sh                    # this tree ("after"), on cuda:0     (about 4-5 min)
#   bash bench/profile_times.sh --before REF_OR_DIR # only the "before" part: another tree, same runs
#   DEVICE=cpu PROFILES=quick bash bench/profile_times.sh   # the 2-core CPU machine
#
# --before takes a folder holding an older checkout (engine/, tui/, themes/, bench/devpath.sh), or a git ref
# where git and the repository are there (`git archive REF`). On the GPU machine, where no .git travels, make
# the folder beforehand in the checkout that is sent (untracked files travel):
#   mkdir -p before && git archive REF engine tui themes pyproject.toml bench/devpath.sh | tar -x -C before
# Stores and texts go to $OUT (one folder down at most, so every file comes back); the runs' logs stay in /tmp.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
RUNS=${RUNS:-3}
PROFILES=${PROFILES:-standard quick}
DEVICE=${DEVICE:-cuda:0}
TAG=after
ROOT=$HERE
if [ "${1:-}" = "--before" ]; then
    TAG=before
    if [ -d "${2:?--before needs a folder or a git ref}" ]; then
        ROOT=$(cd "$2" && pwd)
    else
        ROOT=$(mktemp -d)
        git -C "$HERE" archive "$2" engine tui themes pyproject.toml bench/devpath.sh | tar -x -C "$ROOT" || {
            echo "profile_times: '$2' is neither a folder nor a git ref here (no .git on this machine?)"; exit 2; }
    fi
fi
WORK=$(mktemp -d)  # the store and its logs: the logs stay here, the store is copied to $OUT at the end
STORE=$WORK/$TAG.db
WALLS=$OUT/$TAG-walls.tsv
: > "$WALLS"
(
    cd "$ROOT" && source bench/devpath.sh
    export PYTHONUNBUFFERED=1 RIGCHECK_STORE=$STORE
    for i in $(seq "$RUNS"); do
        for profile in $PROFILES; do
            start=$(date +%s.%N)
            rigcheck run --device "$DEVICE" --profile "$profile" > "$WORK/$profile-$i.log" 2>&1
            rc=$?
            end=$(date +%s.%N)
            printf '%s\t%s\t%s\t%s\t%s\n' "$profile" "$i" "$start" "$end" "$rc" >> "$WALLS"
            echo "$TAG $profile run $i: rc=$rc wall $(python3 -c "print(round($end - $start, 1))") s"
            [ "$rc" -le 1 ] || [ "$rc" -eq 7 ] || tail -15 "$WORK/$profile-$i.log"
        done
    done
)
cp "$STORE" "$OUT/$TAG.db"
python3 "$HERE/bench/profile_times.py" "$OUT/$TAG.db" "$WALLS" | tee "$OUT/$TAG-profile.txt"
python3 "$HERE/bench/profile_substeps.py" "$DEVICE" 2>&1 | tee "$OUT/$TAG-substeps.txt" || true
echo "outputs in $OUT: $TAG.db, $TAG-walls.tsv, $TAG-profile.txt, $TAG-substeps.txt; run logs in $WORK"
