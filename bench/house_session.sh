#!/usr/bin/env bash
# The house (issue 19): the default run on cuda:0 before and after the move, its figures and trust counts.
set -u
tag=$1
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/store-$tag.db PYTHONUNBUFFERED=1
start=$(date +%s)
rigcheck run --device cuda:0 --json $OUT/$tag.json > $OUT/$tag.log 2>&1
echo "rc=$? wall $(( $(date +%s) - start )) s"
python3 bench/summarize_run.py $OUT/$tag.json
