#!/usr/bin/env bash
# Device call: is the cuBLAS baseline slower than PyTorch's own F.linear(F.silu(x), W, b) at
# B = 1024 (both dtypes) and in the FP32 forward at 1024 and 2048, as ../h200-245a85e/ and
# ../h200-e94b2c0/call2/ read (forward + backward 1.06-1.09x PyTorch's at 1024), and why?
# build-cuda/: a slim clean build of the commit; build-cuda/bin/rlk-dev: the same with
# experiment.patch (RLK_DEV_BASELINE=cublas-bwd: the backward's two GEMMs through cublasGemmEx /
# cublasSgemm, as PyTorch's mm; cublas-all: the forward too, bias broadcast then beta = 1, as
# PyTorch's addmm without cuBLASLt; RLK_DEV_BASELINE_EW=vec: the SiLU passes with 16-byte
# accesses and the bias gradient's column sum with 4 columns per thread and 16 warps).
# 1. Which API and kernels each runs: PyTorch under torch.profiler (probe.py); PyTorch and the
#    baseline under the cuBLAS and cuBLASLt API logs (few calls each).
# 2. Times: tools/bench/pytorch_baseline.py, then rlk bench with the three baseline variants, at
#    B = 1024 and 2048, both dtypes; PyTorch again last.
set -uo pipefail
export OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
here=docs/evidence/baseline-pytorch-prepared
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt"; cat "$OUT/gpu.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
T=/tmp/logs; mkdir -p $T
# 0. The baseline variants compute the operator (tests/cuda/test_cublas_baseline.cpp, built with the patch).
for v in lt:none cublas-bwd:vec; do
  IFS=: read -r api ew <<< "$v"
  RLK_DEV_BASELINE=$api RLK_DEV_BASELINE_EW=$ew timeout 120 build-cuda/bin/test_cublas_baseline-dev > $T/test-$api-$ew.log 2>&1
  echo "test $v rc=$? ${SECONDS}s"; tail -n 3 $T/test-$api-$ew.log
done
timeout 120 python3 $here/probe.py --batch 1024,2048 > $T/profile.txt 2>&1; echo "profile rc=$? ${SECONDS}s"
CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE=$T/lt-torch.log CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=$T/cublas-torch.log \
  timeout 120 python3 $here/probe.py --batch 1024 --iters 1 --no-profile > $T/probe-log.txt 2>&1; echo "torch logs rc=$? ${SECONDS}s"
for v in lt; do
  RLK_DEV_BASELINE=$v CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE=$T/lt-rlk-$v.log CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=$T/cublas-rlk-$v.log \
    RLK_PLUGIN_PATH=$PWD/build-cuda/lib timeout 120 build-cuda/bin/rlk-dev bench qwenimage_adaln_mod_projection --device cuda:0 \
    --dtype bf16,fp32 --batch 1024 --warmup 1 --warmup-ms 0 --repeats 5 > $T/rlk-log-$v.txt 2>&1
  echo "rlk logs $v rc=$? ${SECONDS}s"
done
ls -la $T; (cd $T && gzip -f *.log; tar -cf "$OUT/logs.tar" .)
mkdir -p $T/t
timeout 150 python3 tools/bench/pytorch_baseline.py $T/t/pytorch-1.json --batch 1024,2048 > $T/t/pytorch-1.txt 2>&1; echo "torch 1 rc=$? ${SECONDS}s"
for v in lt:none lt:vec cublas-bwd:vec; do
  IFS=: read -r api ew <<< "$v"; v=$api-$ew
  RLK_DEV_BASELINE=$api RLK_DEV_BASELINE_EW=$ew RLK_PLUGIN_PATH=$PWD/build-cuda/lib timeout 150 build-cuda/bin/rlk-dev bench qwenimage_adaln_mod_projection \
    --device cuda:0 --dtype bf16,fp32 --batch 1024,2048 --json $T/t/bench-$v.json > $T/t/bench-$v.txt 2>&1
  echo "bench $v rc=$? ${SECONDS}s"; tail -n 8 $T/t/bench-$v.txt
done
timeout 150 python3 tools/bench/pytorch_baseline.py $T/t/pytorch-2.json --batch 1024,2048 > $T/t/pytorch-2.txt 2>&1; echo "torch 2 rc=$? ${SECONDS}s"
cat $T/t/pytorch-*.txt
tar -cf "$OUT/times.tar" -C $T/t .
echo "call total ${SECONDS}s"
