#!/usr/bin/env bash
# Wave 5's second GPU call (2026-12-07), after the architecture expectations (issue 40) and the mechanism causes
# (issue 41) landed on main: bench/arch_check.sh, then every case of bench/mechanism_cases.sh.
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
date -u
bash bench/arch_check.sh 2>&1 | tail -80
mkdir -p $OUT/arch && mv $OUT/*.json $OUT/*.txt $OUT/*.out $OUT/arch/ 2>/dev/null
bash bench/mechanism_cases.sh > /dev/null 2>&1; cat $OUT/mechanism_cases.txt
mkdir -p /tmp/keep && cp $OUT/mechanism_cases.txt $OUT/arch/arch_check.txt $OUT/arch/references.txt $OUT/arch/default.out /tmp/keep/ 2>/dev/null
rm -rf $OUT/* && cp /tmp/keep/* $OUT/
