#!/usr/bin/env bash
# Thirty-ninth session's device call: on an H200, first the evidence of the carried build (59075e7,
# 2601986's device code: rlk bench of both dtypes and the quick conformance of both dtypes, packed
# into ev.tar), then the prepared backward A/B (../h100-59075e7-dev-bwd-tiles-prepared/ab.sh);
# on any other card the A/B alone.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "gpu: $name"
if [[ $name == *H200* ]]; then
  mkdir -p "$OUT/ev"
  OUT=$OUT/ev RLK_EVIDENCE_QUICK=1 RLK_CONFORM_LIMIT=200 scripts/h200_evidence.sh bench conform
  (cd "$OUT" && tar -cf ev.tar ev && rm -rf ev)
  echo "evidence done ${SECONDS}s"
fi
bash docs/evidence/h100-59075e7-dev-bwd-tiles-prepared/ab.sh
echo "call total ${SECONDS}s"
