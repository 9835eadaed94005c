#!/usr/bin/env bash
# Produces the GPU evidence on a CUDA machine from a build made elsewhere (build-cuda/):
# GPU tests, `rlk bench` (+ PyTorch's own times for the same work) and `rlk conform` for both
# dtypes. Writes everything under $OUT (default: evidence-out/). Used through the lent H200:
#   scripts/h200_evidence.sh            (from the repository root)
set -uo pipefail
out=${OUT:-evidence-out}
mkdir -p "$out"
# The build tree records absolute paths of the machine it was configured on.
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rlk=build-cuda/bin/rlk
key=qwenimage_adaln_mod_projection
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1

step() { local limit=$1; shift; echo "== $* (limit ${limit}s)"; timeout "$limit" "$@"; echo "== exit $? after ${SECONDS}s"; }

# RLK_EVIDENCE_FULL=1 runs the full conformance; the default fits a short lease: quick
# conformance of both dtypes (every gate, small sizes) beside the GPU tests.
repeats=${RLK_BENCH_REPEATS:-50}
step 90 $rlk bench $key --device cuda:0 --dtype bf16,fp32 --batch 1,3,64,256,1024,2048 --warmup 5 \
  --repeats "$repeats" --json "$out/bench.json" --plot "$out/bench.png"
# Correctness after timing: the GPU tests beside conformance of both dtypes.
step ${RLK_TEST_LIMIT:-170} ctest --test-dir build-cuda -R 'Cuda|StrictMath' --output-on-failure -j 2 > "$out/ctest-gpu.log" 2>&1 &
tests=$!
quick=--quick
[ "${RLK_EVIDENCE_FULL:-0}" = 1 ] && quick=
for dtype in bf16 fp32; do
  step 300 $rlk conform $key --device cuda:0 --dtype $dtype $quick --out "$out/conform-$dtype" > "$out/conform-$dtype.log" 2>&1
done
[ "${RLK_WITH_PYTORCH:-0}" = 1 ] && step 90 python3 tools/bench/pytorch_baseline.py "$out/pytorch.json"
wait $tests
grep -E "tests passed|Failed|\*\*\*Failed" "$out/ctest-gpu.log" | tail -15
tail -n 3 "$out/conform-bf16.log" "$out/conform-fp32.log"
