#!/usr/bin/env bash
# Where a run's time goes (issue 42): the default and the quick profile, RUNS times each (3), wall clock from
# the command to its exit, then bench/profile_times.py's table: per stage and per check, start-up and end, the
# host CPU's share (rigcheck's own CPU-seconds from the run's telemetry), medians, SUSPECT and WARN counts.
#
#   bash bench/profile_times.sh                      # this tree ("after"), on cuda:0     (about 4 min)
#   bash bench/profile_times.sh --before REF_OR_DIR  # only the "before" part: another tree, the same runs
#   bash bench/profile_times.sh --both REF_OR_DIR    # before and after, alternated run by run, each first in
#                                                    # turn, so a host's drift favours neither (twice as long)
#   DEVICE=cpu PROFILES=quick bash bench/profile_times.sh --both HEAD~5   # the 2-core CPU machine
#
# REF_OR_DIR: a folder holding an older checkout (engine/, tui/, themes/, bench/devpath.sh), or a git ref where
# git and the repository are there (`git archive REF`). On the GPU machine, where no .git travels, make the
# folder beforehand in the checkout that is sent (untracked files travel):
#   mkdir -p before && git archive REF engine tui themes pyproject.toml bench/devpath.sh | tar -x -C before
# Stores and texts go to $OUT (no deeper, so every file comes back); the runs' own logs stay in /tmp.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
RUNS=${RUNS:-3}
PROFILES=${PROFILES:-standard quick}
DEVICE=${DEVICE:-cuda:0}
WORK=$(mktemp -d)  # the stores and their logs: the logs stay here, the stores are copied to $OUT at the end

tree_of() {  # a folder for REF_OR_DIR
    if [ -d "$1" ]; then
        (cd "$1" && pwd)
    else
        local root
        root=$(mktemp -d)
        git -C "$HERE" archive "$1" engine tui themes pyproject.toml bench/devpath.sh | tar -x -C "$root" || {
            echo "profile_times: '$1' is neither a folder nor a git ref here (no .git on this machine?)" >&2; return 1; }
        echo "$root"
    fi
}

one_run() {  # TAG ROOT PROFILE I: one command, its wall clock in $OUT/TAG-walls.tsv
    local tag=$1 root=$2 profile=$3 i=$4 start end rc
    start=$(date +%s.%N)
    (cd "$root" && source bench/devpath.sh && RIGCHECK_STORE=$WORK/$tag.db PYTHONUNBUFFERED=1 \
        rigcheck run --device "$DEVICE" --profile "$profile") > "$WORK/$tag-$profile-$i.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\t%s\n' "$profile" "$i" "$start" "$end" "$rc" >> "$OUT/$tag-walls.tsv"
    echo "$tag $profile run $i: rc=$rc wall $(python3 -c "print(round($end - $start, 1))") s"
    [ "$rc" -le 1 ] || [ "$rc" -eq 7 ] || tail -15 "$WORK/$tag-$profile-$i.log"
}

case "${1:-}" in
    --before) TAGS="before"; BEFORE=$(tree_of "${2:?--before needs a folder or a git ref}") || exit 2 ;;
    --both) TAGS="before after"; BEFORE=$(tree_of "${2:?--both needs a folder or a git ref}") || exit 2 ;;
    "") TAGS="after"; BEFORE="" ;;
    *) echo "usage: bash bench/profile_times.sh [--before|--both REF_OR_DIR]" >&2; exit 2 ;;
esac
for tag in $TAGS; do : > "$OUT/$tag-walls.tsv"; done
for i in $(seq "$RUNS"); do
    for profile in $PROFILES; do
        order=$TAGS
        [ $((i % 2)) -eq 1 ] || order=$(echo $TAGS | tr ' ' '\n' | tac | tr '\n' ' ')  # even runs: the other first
        for tag in $order; do
            if [ "$tag" = before ]; then one_run before "$BEFORE" "$profile" "$i"; else one_run after "$HERE" "$profile" "$i"; fi
        done
    done
done
for tag in $TAGS; do
    cp "$WORK/$tag.db" "$OUT/$tag.db"
    echo "==== $tag"
    python3 "$HERE/bench/profile_times.py" "$OUT/$tag.db" "$OUT/$tag-walls.tsv" | tee "$OUT/$tag-profile.txt"
done
[ -n "${SKIP_SUBSTEPS:-}" ] || python3 "$HERE/bench/profile_substeps.py" "$DEVICE" 2>&1 | tee "$OUT/substeps.txt" || true
echo "outputs in $OUT: {$(echo $TAGS | tr ' ' ,)}.db, -walls.tsv, -profile.txt; substeps.txt; run logs in $WORK"
