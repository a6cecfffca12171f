#!/usr/bin/env bash
# Issue 20 on the H200, in one call: model references and baseline, the TF32 override's named cause, a quiet
# 60 s burn at the default power limit with a viewer beside it, a 2-CPU set with a burner inside it.
cd "$(dirname "$0")/.."
for part in references_session diagnosis_cases trust_session; do
  echo "######## $part"; bash bench/$part.sh
done
