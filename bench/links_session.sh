#!/usr/bin/env bash
# The links stage against a plain torch.distributed all_reduce loop, in one call, on every GPU of the host.
# Prints both busbw figures at 1 GiB and their ratio (the issue asks for at least 0.97), and the P2P matrix.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=${OUT:-/tmp}/links-store.db PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
echo "== NCCL_* as set: $(env | grep -E '^NCCL_' | tr '\n' ' ')"
echo "== plain loop before"; python3 bench/links_plain.py --size-mib 1024 --iters 20 | tee $out/links_plain_before.json
start=$(date +%s)
rigcheck run links --device all --json $out/links.json > $out/links.log 2>&1
echo "rc=$? wall $(( $(date +%s) - start )) s"
echo "== plain loop after"; python3 bench/links_plain.py --size-mib 1024 --iters 20 | tee $out/links_plain_after.json
grep -E "^  (PASS|WARN|FAIL|SKIP|CRASH|TIMEOUT)|^<|GB/s" $out/links.log | cut -c1-220
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
report = json.load(open(f"{out}/links.json"))
figure = next(m for m in report["measurements"] if m["name"] == "all_reduce 1 GiB busbw")
plain = [json.loads(open(f"{out}/links_plain_{w}.json").read().strip().splitlines()[-1])["busbw_gbs"] for w in ("before", "after")]
print(f"links all_reduce 1 GiB busbw {figure['value']:.1f} GB/s; plain loop {plain[0]:.1f} / {plain[1]:.1f};"
      f" ratio {figure['value'] / max(plain):.3f} against the better plain run")
for fact in report["facts"]:
    data = fact.get("data") or {}
    for key in ("topology", "p2p"):
        if key in data:
            print(key, json.dumps(data[key])[:1500])
PY
