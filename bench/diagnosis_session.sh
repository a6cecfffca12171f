#!/usr/bin/env bash
# Issue 20 on the H200, in one call: a quiet 60 s burn at the default power limit with a viewer beside it and
# a 2-CPU set with a burner inside it; the TF32 override's named cause; model references and a baseline;
# then real contention (a GPU rival, 16 CPU burners). Each part's output also lands in $OUT/<part>.txt.
cd "$(dirname "$0")/.."
for part in trust_session diagnosis_cases references_session contention_cases; do
  echo "######## $part"; timeout 200 bash bench/$part.sh 2>&1 | tee $OUT/$part.txt
done
