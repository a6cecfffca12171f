#!/usr/bin/env bash
# Training alone: cold child, warm child with the CPU arm beside the GPU (overlap), warm with --serial (after).
source bench/devpath.sh
for tag in cold overlap serial; do
    case $tag in cold) extra="--cold" ;; overlap) extra="" ;; serial) extra="--serial" ;; esac
    RIGCHECK_STORE=$OUT/t.db rigcheck run training --device cuda:0 $extra --json $OUT/t-$tag.json > /dev/null 2>&1
    echo "$tag rc=$?"
done
python3 - <<'PY'
import json, os
out = os.environ["OUT"]
runs = {t: {(m["name"], m["device"]): m["value"] for m in json.load(open(f"{out}/t-{t}.json"))["measurements"]} for t in ("cold", "overlap", "serial")}
for key in runs["cold"]:
    print(f"{key[0]:24s} {key[1]:7s}" + "".join(f"{runs[t].get(key, float('nan')):12.4g}" for t in runs))
PY
