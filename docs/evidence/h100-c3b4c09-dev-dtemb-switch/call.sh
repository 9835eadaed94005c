#!/usr/bin/env bash
# Device call for the commit that moved the BF16 d_temb's 256 x 128 tiles from above B = 1024 to
# above 896, run on the build of that commit (build-cuda/) and its plugins with
# ../h100-3ae67a2-dev-dtemb-960/experiment.patch applied (build-dev/lib/).
# 1. scripts/h200_ab.sh, bench rounds only (AB_CHECKS=0), into ab.tar: the switch, finer than
#    ../h100-3ae67a2-dev-dtemb-960/: three alternated rounds of `rlk bench` (BF16, B = 864 ... 960)
#    with the development plugins, d_temb on 256 x 128 above 1024 (before) and above 896 (the
#    commit's) through RLK_DEV_DTEMB_TALL_ABOVE.
# 2. The commit's whole quick check with its own plugin, into ev.tar: `rlk bench` of both dtypes,
#    every GPU test of a one-GPU machine (KernelPaths' switch test at 896 and 897 among them) and
#    the quick conformance of both dtypes.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
AB_VAR=RLK_DEV_DTEMB_TALL_ABOVE AB_FLAGS="1024 896" AB_ROUNDS=3 AB_BATCHES=864,880,896,897,912,928,960 \
  AB_PLUGIN_PATH=$PWD/build-dev/lib AB_CHECKS=0 scripts/h200_ab.sh
mkdir -p "$OUT/ev"
OUT=$OUT/ev RLK_TEST_JOBS=3 RLK_EVIDENCE_QUICK=1 RLK_CONFORM_LIMIT=240 scripts/h200_evidence.sh bench tests conform
(cd "$OUT" && tar -cf ev.tar ev && rm -rf ev)
echo "call total ${SECONDS}s"
