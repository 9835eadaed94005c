#!/usr/bin/env bash
# Produces the GPU evidence on a CUDA machine from a build made elsewhere (build-cuda/):
# GPU tests, `rlk bench` (+ PyTorch's own times for the same work) and `rlk conform` for both
# dtypes. Writes everything under $OUT (default: evidence-out/). Used through the lent H200:
#   scripts/h200_evidence.sh [tests] [bench] [conform]     (default: all three)
# Environment:
#   RLK_TEST_JOBS      ctest parallelism (default 2; the FP64 oracle runs on the host's cores)
#   RLK_EVIDENCE_QUICK=1   conformance in --quick mode instead of the full run (the tests then run
#                          beside it; beside the full run they run first)
#   RLK_WITH_PYTORCH=1     also time PyTorch's own F.linear(F.silu(x)) (tools/bench/pytorch_baseline.py)
#   RLK_BENCH_REPEATS  timed calls per path and case (default 50)
#   RLK_CONFORM_DTYPES dtypes to conform (default "bf16 fp32"); RLK_CONFORM_LIMIT seconds each (default 480)
# The conformance output directories are packed into conform.tar (the device's file return
# takes few files).
set -uo pipefail
out=${OUT:-evidence-out}
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests bench conform)
wants() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

# Tests and tools that look for the build tree under build/ find the carried copy.
[ -e build ] || ln -s build-cuda build
# The build tree records absolute paths of the machine it was configured on: the source tree, and
# the build directory itself (CTest's files name it), which may have been copied to build-cuda/.
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ "$configured" != "$PWD" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$PWD" "$configured"
fi
built=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' build-cuda/CMakeCache.txt)
if [ -n "$built" ] && [ ! -e "$built" ]; then
  mkdir -p "$(dirname "$built")" && ln -s "$PWD/build-cuda" "$built"
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
rlk=build-cuda/bin/rlk
key=qwenimage_adaln_mod_projection
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$out/gpu.txt" 2>&1

step() { local limit=$1; shift; echo "== $* (limit ${limit}s)"; timeout "$limit" "$@"; echo "== exit $? after ${SECONDS}s"; }

if wants bench; then
  repeats=${RLK_BENCH_REPEATS:-50}
  step 120 $rlk bench $key --device cuda:0 --dtype bf16,fp32 --batch 1,3,64,128,256,512,1024,2048 --warmup 5 \
    --repeats "$repeats" --json "$out/bench.json" --plot "$out/bench.png" > "$out/bench.log" 2>&1
  tail -n 20 "$out/bench.log"
  [ "${RLK_WITH_PYTORCH:-0}" = 1 ] && step 150 python3 tools/bench/pytorch_baseline.py "$out/pytorch.json"
fi

tests=""
if wants tests; then
  # Every GPU test (the two-GPU one runs where two GPUs are present, and skips with its reason
  # elsewhere), in the background beside a quick conformance when both are asked for. Beside the
  # full conformance it runs first instead: both lean on the host's cores for the FP64 oracle,
  # and a full BF16 run beside the tests took three times as long (docs/evidence/README.md, 3fd0b14).
  run_tests() {
    step ${RLK_TEST_LIMIT:-400} ctest --test-dir build-cuda -R 'Cuda|CublasBaseline|StrictMath|KernelPaths' --output-on-failure \
      -j "${RLK_TEST_JOBS:-2}" > "$out/ctest-gpu.log" 2>&1
  }
  if wants conform && [ "${RLK_EVIDENCE_QUICK:-0}" != 1 ]; then
    run_tests
  else
    run_tests &
    tests=$!
  fi
fi

if wants conform; then
  quick=
  [ "${RLK_EVIDENCE_QUICK:-0}" = 1 ] && quick=--quick
  dtypes=${RLK_CONFORM_DTYPES:-bf16 fp32}
  for dtype in $dtypes; do
    step "${RLK_CONFORM_LIMIT:-480}" $rlk conform $key --device cuda:0 --dtype $dtype $quick --out "$out/conform-$dtype" > "$out/conform-$dtype.log" 2>&1
    tail -n 3 "$out/conform-$dtype.log"
  done
  (cd "$out" && for dtype in $dtypes; do tar rf conform.tar "conform-$dtype" "conform-$dtype.log" &&
     rm -rf "conform-$dtype" "conform-$dtype.log"; done)
fi

[ -n "$tests" ] && wait $tests
if wants tests; then
  grep -E "tests passed|Failed|\*\*\*Failed|Skipped|Not Run" "$out/ctest-gpu.log" | tail -15
fi
